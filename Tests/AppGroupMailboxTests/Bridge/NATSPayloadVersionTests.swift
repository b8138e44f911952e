import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The payload version across the bridge: forward.py sends it as `Mailbox-Payload-Version`, and
/// consume.py enqueues with it, so a versioned consumer on the other machine decodes a
/// version-2 message as version 2 (without it, the message arrived as version 1 and was fed to
/// the migration from 1).
@Suite struct NATSPayloadVersionTests {
  static let subject = "mailbox.jobs"

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A version-2 message forwarded and consumed is decoded as version 2 on the other side`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let outgoing = try container.mailbox(JobTwo.self, namespace: "out", messageType: "Job")
    try outgoing.enqueue(JobTwo(number: 2, label: "two"))
    try container.rawMailbox(namespace: "out").enqueue(
      Data(#"{"number":1}"#.utf8), messageType: "Job")

    let stored = try NATSBridge.forward(
      container, namespace: "out", to: server, subject: Self.subject)
    let versions = stored.map { ($0["headers"] as? [String: String])?["Mailbox-Payload-Version"] }
    #expect(versions == ["2", nil])

    // A third message whose version header is not a version: terminated, never enqueued.
    let bad =
      #"{"id":"\#(UUID().uuidString.lowercased())","message":{"number":3},"#
      + #""headers":{"Mailbox-Type":"Job","Mailbox-Payload-Version":"two"}}"# + "\n"
    try NATSBridge.tool(server, ["publish", "--subject", Self.subject], stdin: Data(bad.utf8))

    let incoming = try container.rawMailbox(namespace: "in")
    let (settled, stderr) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 2)
    #expect(settled, "\(stderr)")
    #expect(stderr.contains("Mailbox-Payload-Version header is not an integer"))

    let jobs = try container.mailbox(JobTwo.self, namespace: "in", messageType: "Job")
    try jobs.registerMigration(from: 1) { data in
      JobTwo(number: try JSONDecoder().decode(JobOne.self, from: data).number, label: "from 1")
    }
    let claimed = try jobs.claimPending().map(\.message).sorted { $0.number < $1.number }
    #expect(claimed == [JobTwo(number: 1, label: "from 1"), JobTwo(number: 2, label: "two")])
    #expect(try incoming.inspector.entries(in: [.quarantined]).isEmpty)
  }
}
