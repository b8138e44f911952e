import AppGroupMailbox
import Foundation
import Testing

/// `list` shows when a claimed message's lease runs out, in the table as in JSON.
@Suite struct CLIListLeaseTests {
  @Test func `The table's DUE AT column shows a claimed message's lease end`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("{\"n\":1}".utf8))
    try mailbox.enqueue(Data("{\"n\":2}".utf8))
    let claim = try #require(try mailbox.claimPending(limit: 1).first)
    let json = try Mailboxctl.run(["list"] + container.arguments() + ["--json"])
    #expect(json.status == 0)
    let entries = try jsonLines(json.stdout)
    #expect(entries.map { $0["state"] as? String } == ["pending", "claimed"])
    let lease = try #require(entries[1]["leaseExpiresAt"] as? String)
    let text = try Mailboxctl.run(["list"] + container.arguments())
    #expect(text.status == 0)
    #expect(text.lines.count == 3)
    #expect(text.lines[1].hasPrefix("pending "))
    #expect(text.lines[1].hasSuffix("  0           -"))
    #expect(text.lines[2].hasPrefix("claimed      \(claim.id.uuidString.lowercased())  "))
    #expect(text.lines[2].hasSuffix("  1           \(lease)"))
  }
}
