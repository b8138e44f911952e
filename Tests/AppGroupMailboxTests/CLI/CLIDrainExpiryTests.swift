import Foundation
import Testing

@testable import AppGroupMailbox

/// A message whose lifetime runs out before a handler has it leaves the mailbox without being
/// delivered (with priorities, a lower level can wait that long): drain's summary counts it.
@Suite struct CLIDrainExpiryTests {
  @Test func `Drain's summary counts the messages that expired before a handler had them`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(messageLifetime: 60))
    let old = Int64(Date().timeIntervalSince1970 * 1_000_000) - 120_000_000
    for sequence in 1...2 {
      let id = UUID()
      try container.plant(
        "pending", pendingName(micros: old, sequence: UInt64(sequence), id: id),
        envelope(id: id, micros: old, text: "old", type: ""))
    }
    let fresh = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "1"])
    #expect(fresh.status == 0)

    let json = try Mailboxctl.run(["drain"] + container.arguments() + ["--json"])
    #expect(json.status == 0)
    #expect(json.lines.count == 1)
    let summary = try #require(try jsonLines(json.stderr).last)
    #expect(summary["delivered"] as? Int == 1)
    #expect(summary["expired"] as? Int == 2)
    #expect(summary["quarantined"] as? Int == 0)
    #expect(container.names("pending") == [])

    // The text summary says it only when something expired.
    let last = UUID()
    try container.plant(
      "pending", pendingName(micros: old, sequence: 3, id: last),
      envelope(id: last, micros: old, text: "old", type: ""))
    let text = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(
      drainSummary(text.stderr)
        == "mailboxctl: drain: delivered 0, released 0, quarantined 0")
    #expect(text.stderr.contains("; 1 expired before a handler had them"))
    let quiet = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(!quiet.stderr.contains("expired"))
  }
}
