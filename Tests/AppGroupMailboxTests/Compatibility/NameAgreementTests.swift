import Foundation
import Testing

@testable import AppGroupMailbox

/// Entry names and moves judged alike by the Swift library and interop/python (docs/FORMAT.md,
/// "Names" and "Moves"). Found by an adversarial session: Swift took a claimed name whose token
/// had a sign (`UInt64(_:radix:)` reads `+`), split a delayed name by characters (a combining
/// accent after the `-` hid the pending name's first byte), and trimmed quarantine by a looser
/// name test than Python's; Python left the id out of the claim order, and its recovery and
/// promotion met a pending copy with an error or, for promotion, a second delivery.
@Suite struct NameAgreementTests {
  static let stem = "1767225600000000-00000000000000000001-10000000-0000-4000-8000-000000000001-1"

  /// Names, and which parser of each side takes them: (pending, claimed, delayed, quarantine).
  static let names: [(name: String, takes: String)] = [
    (stem + ".msg", "P---"),
    (stem + ".0123456789abcdef.1767226200000000.claim", "-C--"),
    (stem + ".+123456789abcdef.1767226200000000.claim", "----"),
    (stem + ".-123456789abcdef.1767226200000000.claim", "----"),
    (stem + ".0123456789ABCDEF.1767226200000000.claim", "----"),
    ("1767225600000000-" + stem + ".msg", "--D-"),
    ("1767225600000000-\u{301}" + stem + ".msg", "----"),
    ("1767225600000000-\u{200D}" + stem + ".msg", "----"),
    ("1767225600000000-malformed-10000000-0000-4000-8000-000000000001-0badf00d.q", "---Q"),
    ("1767225600000000-malformed-unknown-0BADF00D.q", "---Q"),
    ("1767225600000000-bogus-UNKNOWN-0badf00d.q", "---Q"),
    ("1767225600000000-malformed-unknown-+badf00d.q", "----"),
    ("1767225600000000-x.q", "----"),
    ("1767225600000000--unknown-0badf00d.q", "----"),
    ("176722560000000\u{661}-malformed-unknown-0badf00d.q", "----"),
  ]

  static func swiftTakes(_ name: String) -> String {
    (PendingName(parsing: name) != nil ? "P" : "-")
      + (ClaimedName(parsing: name) != nil ? "C" : "-")
      + (DelayedName(parsing: name) != nil ? "D" : "-")
      + (Spool.looksQuarantined(name) ? "Q" : "-")
  }

  @Test func `The Swift parsers take exactly the names docs/FORMAT.md gives`() {
    for (name, takes) in Self.names {
      #expect(Self.swiftTakes(name) == takes, "\(name)")
    }
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python takes the same names`() throws {
    let program = """
      import os
      from agm.names import QUARANTINED, ClaimedName, Name, parse_delayed
      for line in sys.stdin.read().split():
          name = os.fsdecode(bytes.fromhex(line))
          print(("P" if Name.parse(name) else "-") + ("C" if ClaimedName.parse(name) else "-")
                + ("D" if parse_delayed(name) else "-")
                + ("Q" if QUARANTINED.fullmatch(name) else "-"))
      """
    let input = Self.names.map { $0.name.utf8.map { String(format: "%02x", $0) }.joined() }
    let printed = try PythonSpool.lines(
      of: program, stdin: Data(input.joined(separator: "\n").utf8))
    #expect(printed == Self.names.map(\.takes))
  }

  /// Quarantine entries in the order trim deletes them (docs/FORMAT.md, "Quarantine"): foreign
  /// names first, then quarantine names, each by bytes. Swift compared `String`s, which holds
  /// `e` with a combining accent equal to `é` and reads bytes that are not UTF-8 as U+FFFD, and
  /// Python compared code points (surrogate escapes for such bytes): the two trimmed different
  /// entries of one quarantine.
  static let trimOrder: [[UInt8]] = [
    Array("Z".utf8),
    Array("e\u{301}x".utf8),
    Array("\u{E9}a".utf8),
    Array("\u{E000}".utf8),
    [0xFF, 0x61],
    Array("1767225500000000-unsafe-unknown-0badf00d.q".utf8),
    Array("1767225600000000-malformed-unknown-0badf00d.q".utf8),
  ]

  @Test func `The Swift trim orders quarantine entries by their bytes`() {
    let entries = Self.trimOrder.reversed().map { name in
      name.withUnsafeBufferPointer { DirectoryEntry(bytes: $0, type: UInt8(DT_REG)) }
    }
    let sorted = entries.sorted { Spool.trimKey($0) < Spool.trimKey($1) }
    #expect(sorted.map(\.exactName.bytes) == Self.trimOrder)
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python trims quarantine entries in the same order`() throws {
    let program = """
      import os
      from agm.names import trim_key
      names = [os.fsdecode(bytes.fromhex(line)) for line in sys.stdin.read().split()]
      for name in sorted(names, key=trim_key):
          print(os.fsencode(name).hex())
      """
    let hex = Self.trimOrder.map { $0.map { String(format: "%02x", $0) }.joined() }
    let printed = try PythonSpool.lines(
      of: program, stdin: Data(hex.reversed().joined(separator: "\n").utf8))
    #expect(printed == hex)
  }

  /// A message under a pending name, and a second entry a move meets: an expired claim of the
  /// same stem (recovery) or a due delayed entry of it (promotion), with the same bytes or others.
  static func plantPair(
    _ container: TemporaryContainer, area: String, sameBytes: Bool
  ) throws -> String {
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let id = UUID()
    let pending = PendingName(
      key: MessageKey(micros: now - 1_000_000, sequence: 1), id: id, attempts: 0)
    let file = { (text: String) in
      Array(
        try Envelope.encode(
          id: id, enqueuedAt: now - 1_000_000, messageType: "", payload: Data(text.utf8)))
    }
    try container.plant("pending", pending.fileName, try file("\"first\""))
    let second = try file(sameBytes ? "\"first\"" : "\"second\"")
    if area == "claimed" {
      try container.plant(
        "claimed", ClaimedName(message: pending, token: 7, leaseUntilMicros: now - 1).fileName,
        second)
    } else {
      try container.plant(
        "delayed", DelayedName(dueMicros: now - 1, message: pending).fileName, second)
    }
    return id.uuidString.lowercased()
  }

  @Test(
    .enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"),
    arguments: [("claimed", true), ("claimed", false), ("delayed", true), ("delayed", false)])
  func `A move that meets a copy keeps the message once, in both readers`(
    area: String, sameBytes: Bool
  ) throws {
    // The library, then Python, each on its own mailbox.
    let swiftSide = try TemporaryContainer()
    let raw = try swiftSide.rawMailbox()
    let swiftID = try Self.plantPair(swiftSide, area: area, sameBytes: sameBytes)
    let claims = try raw.claimPending()
    #expect(claims.map { $0.id.uuidString.lowercased() } == [swiftID])
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"first\""])
    #expect(swiftSide.quarantineReasons() == (sameBytes ? [] : ["conflict"]))

    let pythonSide = try TemporaryContainer()
    _ = try pythonSide.rawMailbox()  // creates the namespace and its settings
    let pythonID = try Self.plantPair(pythonSide, area: area, sameBytes: sameBytes)
    let delivered = try PythonSpool.delivered(try PythonSpool.run("drain", pythonSide))
    #expect(delivered.map(\.id) == [pythonID])
    #expect(delivered.map(\.payload) == ["\"first\""])
    #expect(pythonSide.quarantineReasons() == (sameBytes ? [] : ["conflict"]))
    #expect(pythonSide.names("pending") == [] && pythonSide.names("delayed") == [])
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `Equal keys are claimed in id order by both readers`() throws {
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000) - 1_000_000
    let ids = (0..<6).map { _ in UUID() }
    func plant(_ container: TemporaryContainer) throws {
      for id in ids {
        let name = PendingName(key: MessageKey(micros: now, sequence: 1), id: id, attempts: 0)
        try container.plant(
          "pending", name.fileName,
          Array(
            try Envelope.encode(id: id, enqueuedAt: now, messageType: "", payload: Data("1".utf8))))
      }
    }
    let expected = ids.map { $0.uuidString.lowercased() }.sorted()
    let swiftSide = try TemporaryContainer()
    let raw = try swiftSide.rawMailbox()
    try plant(swiftSide)
    #expect(try raw.claimPending().map { $0.id.uuidString.lowercased() } == expected)
    let pythonSide = try TemporaryContainer()
    _ = try pythonSide.rawMailbox()
    try plant(pythonSide)
    #expect(
      try PythonSpool.delivered(try PythonSpool.run("drain", pythonSide)).map(\.id) == expected)
  }

  /// Python compares tags as code points (`str` equality); the Swift side compares them alike,
  /// not by canonical equivalence (adversarial session, round 2).
  @Test func `A type tag takes only the same Unicode scalars`() {
    let composed = MessageTypeTag(tag: "Caf\u{E9}", isDefault: false)
    #expect(composed.accepts("Caf\u{E9}"))
    #expect(!composed.accepts("Cafe\u{301}"))
    #expect(!MessageTypeTag(tag: "Cafe\u{301}", isDefault: true).accepts("App.Caf\u{E9}"))
    #expect(MessageTypeTag(tag: "Caf\u{E9}", isDefault: true).accepts("App.Caf\u{E9}"))
  }
}
