import Foundation
import Testing

@testable import AppGroupMailbox

/// What docs/FORMAT.md states about name lengths and the state line is what the code formats.
@Suite struct FormatDocumentTests {
  static let format = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("docs/FORMAT.md")

  /// docs/FORMAT.md with every run of white space (line breaks included) as one space.
  static func document() throws -> String {
    try String(contentsOf: format, encoding: .utf8)
      .split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
  }

  @Test func `The longest names FORMAT.md gives are the longest the code formats`() throws {
    let id = UUID()
    let longest = PendingName(
      key: MessageKey(micros: MessageKey.maxMicros, sequence: .max, level: 9), id: id,
      attempts: PendingName.maxAttempts)
    let claimed = ClaimedName(message: longest, token: .max, leaseUntilMicros: MessageKey.maxMicros)
    let delayed = DelayedName(dueMicros: MessageKey.maxMicros, message: longest)
    let quarantined = QuarantineReason.allCases.map {
      QuarantineName(micros: MessageKey.maxMicros, reason: $0, id: id, nonce: .max).fileName.utf8
        .count
    }.max()
    #expect(longest.fileName.utf8.count == 92)
    #expect(claimed.fileName.utf8.count == 128)
    #expect(delayed.fileName.utf8.count == 109)
    #expect(quarantined == 75)
    // Each parses back to itself, so a longer variant of a field is not a name at all.
    #expect(PendingName(parsing: longest.fileName) == longest)
    #expect(ClaimedName(parsing: claimed.fileName) == claimed)
    #expect(DelayedName(parsing: delayed.fileName) == delayed)
    #expect(
      try Self.document().contains(
        "= 128 bytes (a pending name is at most 92, a delayed name 109, a quarantine name 75)"))
  }

  @Test func `The state line FORMAT.md gives is the one the code writes and parses`() throws {
    let counters = SpoolCounters(
      sequence: 12, depth: 3, newestImplicitMicros: 1_795_000_000_123_456)
    let line = String(decoding: counters.line, as: UTF8.self)
    #expect(
      line == "1 00000000000000000012 00000000000000000003 00001795000000123456\n")
    #expect(line.utf8.count == 65)
    #expect(SpoolCounters(line: counters.line) == counters)
    #expect(try Self.document().contains("One line of exactly 65 bytes:"))
    // Out of the stated ranges, a line does not parse (and is rebuilt from the names).
    let tooDeep = "1 00000000000000000012 00000000002147483648 00001795000000123456\n"
    #expect(SpoolCounters(line: Array(tooDeep.utf8)) == nil)
    let tooNew = "1 00000000000000000012 00000000000000000003 00010000000000000000\n"
    #expect(SpoolCounters(line: Array(tooNew.utf8)) == nil)
  }

  @Test func `Every quarantine reason the code uses is listed in FORMAT.md`() throws {
    let document = try Self.document()
    for reason in QuarantineReason.allCases {
      #expect(document.contains("`\(reason.rawValue)` ("), "missing reason \(reason.rawValue)")
    }
  }
}
