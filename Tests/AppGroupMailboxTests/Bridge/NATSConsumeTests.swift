import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// The reverse direction: python/nats_bridge/consume.py pulls from a durable JetStream consumer
/// of a real `nats-server -js` into a local mailbox with `mailboxctl enqueue --id`, SIGKILLed on
/// the way.
@Suite struct NATSConsumeTests {
  static let count = 1_000
  static let subject = "mailbox.jobs"

  /// Publishes `count` dpkg status entries as JSON strings with ids and enqueue dates; returns
  /// id (lower case) to enqueue date text.
  func publish(_ server: NATSServer) throws -> [String: String] {
    let entries = try NATSBridge.dpkgEntries()
    var lines = ""
    var published: [String: String] = [:]
    let start = Date(timeIntervalSince1970: 1_790_000_000)
    for index in 0..<Self.count {
      let id = UUID().uuidString.lowercased()
      let date = ISO8601.format(start.addingTimeInterval(Double(index) * 0.001))
      published[id] = date
      lines +=
        "{\"id\":\"\(id)\",\"enqueuedAt\":\"\(date)\",\"message\":"
        + "\(JSONText.string(entries[index % entries.count]))}\n"
    }
    let result = try NATSBridge.tool(
      server, ["publish", "--subject", Self.subject], stdin: Data(lines.utf8))
    #expect(result.contains("\"published\": \(Self.count)"))
    return published
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func
    `Every JetStream message lands in the local mailbox exactly once through 2 consumer SIGKILLs`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let published = try publish(server)
    // The mailbox's settings are stored when it is created: room for every message, and a
    // lifetime longer than the messages' age (they are dated September 2026; an enqueue dated
    // past the lifetime is refused, and the bridge terminates it in JetStream).
    let mailbox = try container.rawMailbox(
      limits: .init(
        maxMessages: 10_000, maxPayloadBytes: 1 << 20, messageLifetime: 86_400 * 3_650))
    func arrived() throws -> [AppGroupMailboxEntry] {
      try mailbox.inspector.entries(in: [.pending, .claimed, .delayed])
    }
    let arguments = [
      NATSBridge.script("consume.py"), "--server", server.url, "--stream", "MAILBOX",
      "--durable", "local", "--ack-wait", "2", "--batch", "32", "--parallel", "4",
      "--mailboxctl", Mailboxctl.url.path, "--",
    ]
    let enqueue = container.arguments() + ["--relaxed"]
    var consumer = try Processes.start(NATSBridge.python, arguments + enqueue)
    // A failed expectation must not leave the consumer running after the test.
    defer { if consumer.process.isRunning { consumer.signal(SIGKILL) } }
    // Bounds on a stall, not on speed: under a sanitizer each `mailboxctl enqueue` starts
    // slowly, and 1,000 of them take minutes.
    let depth = { try mailbox.inspector.status().depth }
    for target in [Self.count / 4, Self.count / 2] {
      let reached = try NATSBridge.waitUntil(stalledFor: 120, progress: depth) {
        try depth() >= target
      }
      try #require(reached, "stuck before \(target)")
      consumer.signal(SIGKILL)
      _ = try consumer.finish(deadline: 30)
      consumer = try Processes.start(NATSBridge.python, arguments + enqueue)
    }
    var pending: [String: Any] = [:]
    let settled = try NATSBridge.waitUntil(stalledFor: 120, progress: depth) {
      guard try depth() >= Self.count else { return false }
      pending = try NATSBridge.info(server, ["--name", "MAILBOX", "--durable", "local"])
      return pending["numPending"] as? Int == 0 && pending["numAckPending"] as? Int == 0
    }
    consumer.signal(SIGTERM)
    let last = try consumer.finish(deadline: 60)
    #expect(settled, "\(pending) \(last.stderr)")
    #expect(last.status == 0, "\(last.stderr)")

    let entries = try arrived()
    #expect(entries.count == Self.count)
    #expect(Set(entries.compactMap { $0.id?.uuidString.lowercased() }) == Set(published.keys))
    let dates = entries.filter { entry in
      guard let id = entry.id, let date = entry.enqueuedAt else { return false }
      return published[id.uuidString.lowercased()] == ISO8601.format(date)
    }
    #expect(dates.count == Self.count)
    let info = try NATSBridge.info(server, ["--name", "MAILBOX", "--durable", "local"])
    #expect(info["numPending"] as? Int == 0)
    #expect(info["numAckPending"] as? Int == 0)
  }
}
