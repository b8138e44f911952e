import Foundation
import Testing

@testable import AppGroupMailbox

/// What `mailboxctl migrate` counts as a message the mailbox holds already, and the bounds it
/// keeps whatever the mailbox's overflow policy: it never deletes an old file whose message is
/// not deliverable in the mailbox, and never deletes a message it imported.
@Suite struct MigrationPresenceTests {
  typealias Old = MigrationHazardTests

  static func id(_ number: Int) -> UUID {
    UUID(uuidString: String(format: "50000000-0000-4000-8000-%012d", number))!
  }

  /// Writes old pending files with ids and payloads `numbers`, dated a minute ago in that order.
  static func writeOld(_ container: TemporaryContainer, _ numbers: ClosedRange<Int>) throws {
    let start = Date().timeIntervalSinceReferenceDate - 60
    for number in numbers {
      try Old.writeOld(
        container, String(format: "pending-%020d-%@.json", number, id(number).uuidString),
        id: id(number), seconds: start + Double(number), message: "{\"n\":\(number)}")
    }
  }

  @Test func `With discard-oldest a full mailbox stops migrate; nothing imported is evicted`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + [
        "--max-messages", "3", "--overflow", "discard-oldest",
      ])
    #expect(created.status == 0, "\(created.stderr)")
    try container.rawMailbox().enqueue(Data(#""kept""#.utf8))
    try Self.writeOld(container, 1...4)
    let full = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(full.status == 75, "\(full.stderr)")
    #expect(full.stderr.contains("never evicts"), "\(full.stderr)")
    #expect(full.stderr.contains("--max-messages 5'"), "\(full.stderr)")
    #expect(try Old.oldNames(container).count == 2)
    let raised = try Mailboxctl.run(["config"] + container.arguments() + ["--max-messages", "10"])
    #expect(raised.status == 0, "\(raised.stderr)")
    let rest = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(rest.status == 0, "\(rest.stderr)")
    #expect(
      rest.stdout == "{\"imported\":2,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":0}\n")
    #expect(
      try Old.pendingPayloads(container) == [
        #"{"n":1}"#, #"{"n":2}"#, #"{"n":3}"#, #"{"n":4}"#, #""kept""#,
      ])
  }

  @Test func `A copy with the same payload but another date is a conflict, not already present`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--message-lifetime", "315360000"])
    #expect(created.status == 0, "\(created.stderr)")
    try container.rawMailbox().enqueue(
      Data(#"{"n":1}"#.utf8), id: Self.id(1),
      enqueuedAt: Date(timeIntervalSince1970: 1_577_836_800))
    try Self.writeOld(container, 1...1)
    let old = try Data(
      contentsOf: Old.namespace(container).appendingPathComponent(try Old.oldNames(container)[0]))
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":0,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(try Old.quarantinedBytes(container, .conflict) == [old])
  }

  @Test func `Every copy of a conflicting old message counts toward the quarantine bound`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-quarantined-files", "1"])
    #expect(created.status == 0, "\(created.stderr)")
    try container.rawMailbox().enqueue(Data(#"{"v":"A"}"#.utf8), id: Self.id(1))
    try Self.writeOld(container, 2...2)
    for number in [3, 4] {
      try Old.writeOld(
        container, String(format: "pending-%020d-B.json", number), id: Self.id(1),
        message: #"{"v":"B"}"#)
    }
    let refused = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(refused.status == 65, "\(refused.stderr)")
    #expect(refused.stderr.contains("2 old files would go to quarantine/"), "\(refused.stderr)")
    #expect(try Old.oldNames(container).count == 3)
    #expect(container.names("quarantine").isEmpty)
    #expect(try Old.pendingPayloads(container) == [#"{"v":"A"}"#])
  }

  @Test
  func `Two old files with one id and payload but other dates are one message and a conflict`()
    throws
  {
    let container = try TemporaryContainer()
    let start = Date().timeIntervalSinceReferenceDate.rounded(.down) - 600
    for (number, offset) in [(1, 0.0), (2, 100.0)] {
      try Old.writeOld(
        container, "pending-0000000000000000000\(number)-A.json", id: Self.id(1),
        seconds: start + offset, message: #"{"v":1}"#)
    }
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":1,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(container.quarantined().map(\.reason) == [.conflict])
  }

  @Test func `A full mailbox above a lowered bound: migrate names a bound over its depth`() throws {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(["create"] + container.arguments() + ["--max-messages", "10"])
    #expect(created.status == 0, "\(created.stderr)")
    let mailbox = try container.rawMailbox()
    for number in 0..<4 { try mailbox.enqueue(Data("\(number)".utf8)) }
    let lowered = try Mailboxctl.run(["config"] + container.arguments() + ["--max-messages", "2"])
    #expect(lowered.status == 0, "\(lowered.stderr)")
    try Self.writeOld(container, 1...1)
    let full = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(full.status == 75, "\(full.stderr)")
    #expect(full.stderr.contains("--max-messages 5'"), "\(full.stderr)")
  }
}
