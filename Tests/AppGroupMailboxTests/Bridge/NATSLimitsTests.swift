import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// What the server refuses, found by an adversarial session: a message whose payload fit
/// max_payload only without its headers closed the connection for good (nats-py checks the
/// payload alone, and does not reconnect after the server's error), so nothing was forwarded
/// again; and consume.py used a durable consumer that existed with other settings (no
/// acknowledgements lost every message a full mailbox refused).
@Suite struct NATSLimitsTests {
  static let subject = "mailbox.jobs"
  /// nats-server's default max_payload, 1 MiB.
  static let maxPayload = 1 << 20

  /// Forwards four small messages of `outgoing` around one with `payload` (enqueued second) to
  /// `server`; expects the big one dead-lettered, `line` said about it, and the others stored.
  func expectDeadLettered(
    _ payload: String, between outgoing: AppGroupRawMailbox, in container: TemporaryContainer,
    to server: NATSServer, saying line: (String) -> String
  ) throws {
    let first = try outgoing.enqueue(Data("1".utf8)).id
    let big = try outgoing.enqueue(Data(payload.utf8)).id.uuidString.lowercased()
    let rest = try (2...4).map { try outgoing.enqueue(Data("\($0)".utf8)).id }
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: "out") + [
        "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"), "--server",
        server.url, "--subject", Self.subject,
      ])
    #expect(forwarded.status == 0, "\(forwarded.stderr)")
    #expect(forwarded.stderr.contains(line(big)), "\(forwarded.stderr)")
    let stored = try jsonLines(try NATSBridge.tool(server, ["dump", "--name", "MAILBOX"]))
    #expect(
      stored.map { $0["id"] as? String }
        == ([first] + rest).map { $0.uuidString.lowercased() })
    let quarantined = try outgoing.inspector.entries(in: [.quarantined])
    #expect(quarantined.map { $0.id?.uuidString.lowercased() } == [big])
    #expect(try outgoing.inspector.status().depth == 0)
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A message over max_payload with its headers is a dead letter and the rest go on`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let outgoing = try container.rawMailbox(
      namespace: "out", limits: .init(maxPayloadBytes: 2 * Self.maxPayload))
    // A JSON string of max_payload - 60 bytes: the payload fits, not with its headers.
    try expectDeadLettered(
      "\"" + String(repeating: "x", count: Self.maxPayload - 62) + "\"", between: outgoing,
      in: container, to: server
    ) { "message \($0) is larger than the server takes (" }
  }

  /// Found by an adversarial review: JetStream's refusal of a message over the stream's
  /// max_msg_size (error 10054) was answered "retry", so the message came back for ever.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A message over the stream's max_msg_size is a dead letter and the rest go on`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(
      in: container, subject: Self.subject, ["--max-msg-size", "400"])
    defer { server.stop() }
    let outgoing = try container.rawMailbox(namespace: "out")
    // 400 bytes of payload: over the limit whatever the headers.
    try expectDeadLettered(
      "\"" + String(repeating: "x", count: 398) + "\"", between: outgoing, in: container,
      to: server
    ) {
      "message \($0) is larger than the stream takes (message size exceeds maximum allowed): "
        + "dead letter"
    }
  }

  /// `create-stream` of a stream that exists changes only the options given: it reset the
  /// others to their defaults (an operator's max_msg_size was lost to a new duplicate window),
  /// and its subjects to the one `--subject` it required.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `create-stream keeps the options of an existing stream that it is not given`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(
      in: container, subject: Self.subject,
      ["--subject", "mailbox.other", "--max-msg-size", "400", "--duplicate-window", "60"])
    defer { server.stop() }
    let changed = try NATSBridge.tool(
      server, ["create-stream", "--name", "MAILBOX", "--replicas", "1"])
    #expect(
      changed == #"{"stream": "MAILBOX", "subjects": ["mailbox.jobs", "mailbox.other"], "#
        + #""duplicateWindow": 60.0, "replicas": 1, "maxMsgSize": 400}"# + "\n")
  }

  @Test(
    .enabled(if: NATSBridge.runs, NATSBridge.reason),
    arguments: [
      (["--ack", "none"], "its ack policy is none, not explicit"),
      (
        ["--filter", "mailbox.other"], "it filters mailbox.other, not nothing (--subject not given)"
      ),
      (["--push", "deliver.here"], "it is a push consumer"),
    ])
  func `A durable consumer made otherwise is refused with exit 78, naming why`(
    options: [String], reason: String
  ) throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.>")
    defer { server.stop() }
    try NATSBridge.tool(
      server, ["create-consumer", "--name", "MAILBOX", "--durable", "local"] + options)
    let consume = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("consume.py"), "--server", server.url, "--stream", "MAILBOX",
        "--durable", "local",
      ] + NATSBridge.consumeArguments(into: container)
    ).finish(deadline: 60)
    #expect(consume.status == 78)
    #expect(
      consume.stderr
        == "consume.py: cannot consume from stream MAILBOX, durable consumer local: it exists "
        + "with other settings: \(reason); delete it or give another --durable\n")
  }
}
