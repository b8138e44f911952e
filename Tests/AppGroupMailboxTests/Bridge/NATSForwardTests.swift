import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// The forward direction: `mailboxctl drain --follow --coprocess python/nats_bridge/forward.py`
/// into a real `nats-server -js`, with drain and the server killed and restarted on the way.
@Suite struct NATSForwardTests {
  static let count = 10_000
  static let subject = "mailbox.jobs"

  /// Enqueues `count` dpkg status entries (repeated as needed) as JSON strings; returns each
  /// id (lower case) with the message's stored bytes.
  func fill(_ container: TemporaryContainer) throws -> [String: Data] {
    let entries = try NATSBridge.dpkgEntries()
    let mailbox = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs",
      limits: .init(maxMessages: 20_000, maxPayloadBytes: 1 << 20), durability: .relaxed)
    var messages: [String: Data] = [:]
    for index in 0..<Self.count {
      let data = Data(JSONText.string(entries[index % entries.count]).utf8)
      messages[try mailbox.enqueue(data).id.uuidString.lowercased()] = data
    }
    return messages
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func
    `10,000 messages reach JetStream once each, byte for byte, through 3 drain SIGKILLs and a server restart`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(
      in: container, subject: Self.subject, ["--duplicate-window", "600"])
    defer { server.stop() }
    let messages = try fill(container)
    #expect(messages.count == Self.count)
    let mailbox = try container.rawMailbox()
    func left() throws -> Int {
      try mailbox.inspector.status().depth
    }
    let arguments =
      ["drain"] + container.arguments() + [
        "--follow", "--relaxed", "--jobs", "64", "--claim-timeout", "3", "--max-payload-bytes",
        "1048576", "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"),
        "--server", server.url, "--subject", Self.subject, "--publish-timeout", "2",
        "--retry-after", "0.5",
      ]
    var stderr = ""
    var drain = try Mailboxctl.start(arguments)
    // Kill drain at three points, restart the server between the second and third.
    for (step, forwarded) in [1_500, 3_500, 5_500, 7_500].enumerated() {
      // A bound on a stall, not on speed (a sanitizer slows drain and its handler).
      let reached = try NATSBridge.waitUntil(stalledFor: 120, progress: left) {
        try Self.count - left() >= forwarded
      }
      try #require(reached, "stuck before \(forwarded): \(drain.stderr)")
      if step == 2 {
        server.stop()
        try server.start()
        continue
      }
      drain.signal(SIGKILL)
      stderr += try drain.finish(deadline: 60).stderr
      drain = try Mailboxctl.start(arguments)
    }
    let drained = try NATSBridge.waitUntil(stalledFor: 120, progress: left) { try left() == 0 }
    drain.signal(SIGTERM)
    let last = try drain.finish(deadline: 60)
    stderr += last.stderr
    try #require(drained, "\(stderr)")
    #expect(last.status == 0, "\(last.stderr)")
    #expect(try mailbox.inspector.entries(in: [.quarantined]).isEmpty)

    let info = try NATSBridge.info(server, ["--name", "MAILBOX"])
    #expect(info["messages"] as? Int == Self.count)
    let stored = try jsonLines(
      try NATSBridge.tool(server, ["dump", "--name", "MAILBOX"], deadline: 900))
    #expect(stored.count == Self.count)
    var seen = Set<String>()
    var equal = 0
    for entry in stored {
      guard let id = entry["id"] as? String, let text = entry["data"] as? String,
        let data = Data(base64Encoded: text)
      else { continue }
      seen.insert(id)
      if messages[id] == data { equal += 1 }
    }
    #expect(seen == Set(messages.keys))
    #expect(equal == Self.count)
  }
}
