import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// consume.py and the headers a third party may write (found by an adversarial session): a
/// `Mailbox-Type` starting with `-` reached `mailboxctl enqueue` as an option and a
/// `Mailbox-Enqueued-At` that is not a date as a usage error (exit 64), both redelivered for
/// ever; enough of them filled the consumer's `max_ack_pending` and stalled every message
/// behind them.
@Suite struct NATSHeaderTests {
  static let subject = "mailbox.jobs"

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A type that looks like an option is enqueued and a date that is not one terminated`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let ids = (0..<3).map { _ in UUID().uuidString.lowercased() }
    let lines = [
      #"{"id":"\#(ids[0])","message":1,"headers":{"Mailbox-Enqueued-At":"2026-13-45T00:00:00Z"}}"#,
      #"{"id":"\#(ids[1])","message":2,"headers":{"Mailbox-Type":"-weird","#
        + #""Mailbox-Enqueued-At":"2026-12-02 12:00:00+02:00"}}"#,
      #"{"id":"\#(ids[2])","message":3}"#,
    ]
    try NATSBridge.tool(
      server, ["publish", "--subject", Self.subject],
      stdin: Data(lines.map { $0 + "\n" }.joined().utf8))
    let incoming = try container.rawMailbox(namespace: "in")
    let (settled, stderr) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 2)
    #expect(settled, "\(stderr)")
    #expect(
      stderr.contains(
        "message \(ids[0]) terminated: its Mailbox-Enqueued-At header is not an ISO 8601 date"))
    let pending = try incoming.inspector.entries(in: [.pending])
    #expect(pending.map { $0.id?.uuidString.lowercased() } == [ids[1], ids[2]])
    let weird = try incoming.inspector.envelope(ids[1])
    #expect(weird?.messageType == "-weird")
    #expect(weird?.enqueuedAt == ISO8601DateFormatter().date(from: "2026-12-02T10:00:00Z"))
  }
}
