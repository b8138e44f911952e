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
    let ids = (0..<5).map { _ in UUID().uuidString.lowercased() }
    // An hour ago, written with a space and an offset: within the mailbox's one-day lifetime
    // whenever the test runs (a fixed date ran out a day after it was written).
    let hourAgo = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))
    let offset = DateFormatter()
    offset.locale = Locale(identifier: "en_US_POSIX")
    offset.timeZone = TimeZone(secondsFromGMT: 7200)
    offset.dateFormat = "yyyy-MM-dd HH:mm:ss'+02:00'"
    let lines = [
      #"{"id":"\#(ids[0])","message":1,"headers":{"Mailbox-Enqueued-At":"2026-13-45T00:00:00Z"}}"#,
      // A date, but past what a mailbox represents: mailboxctl refused it as a usage error
      // (exit 64), retried for ever.
      #"{"id":"\#(ids[3])","message":4,"headers":{"Mailbox-Enqueued-At":"9999-12-31T23:59:59Z"}}"#,
      #"{"id":"\#(ids[1])","message":2,"headers":{"Mailbox-Type":"-weird","#
        + #""Mailbox-Enqueued-At":"\#(offset.string(from: hourAgo))"}}"#,
      #"{"id":"\#(ids[2])","message":3}"#,
      // Digits, but not ASCII ones (Python's \d took them): not ISO 8601.
      #"{"id":"\#(ids[4])","message":5,"headers":{"Mailbox-Enqueued-At":"２０２６-01-02T03:04:05Z"}}"#,
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
    #expect(
      stderr.contains(
        "message \(ids[3]) terminated: its Mailbox-Enqueued-At header is not an ISO 8601 date "
          + "from 1970 to 2286"))
    #expect(
      stderr.contains(
        "message \(ids[4]) terminated: its Mailbox-Enqueued-At header is not an ISO 8601 date"),
      "\(stderr)")
    let pending = try incoming.inspector.entries(in: [.pending])
    #expect(pending.map { $0.id?.uuidString.lowercased() } == [ids[1], ids[2]])
    let weird = try incoming.inspector.envelope(ids[1])
    #expect(weird?.messageType == "-weird")
    #expect(weird?.enqueuedAt == hourAgo)
  }

  /// A type tag NATS would change (nats-py trims a header value's ends and turns line breaks
  /// into spaces: " Job" and "Job\n" arrived as "Job", for another type's consumers) crosses in
  /// `Mailbox-Type-Encoded`; one that crosses unchanged stays readable in `Mailbox-Type`.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `Every type tag crosses the bridge exactly, and a bad encoded one is terminated`()
    throws
  {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let tags = [" Job", "Job\n", "Job\r\nX-Evil: 1", "\tJob", "Été", "Array<Job>", "a b", "%41"]
    let outgoing = try container.rawMailbox(namespace: "out")
    let ids = try tags.map {
      try outgoing.enqueue(Data("1".utf8), messageType: $0).id.uuidString.lowercased()
    }
    let stored = try NATSBridge.forward(
      container, namespace: "out", to: server, subject: Self.subject)
    let headers = stored.map { $0["headers"] as? [String: String] ?? [:] }
    #expect(
      headers.map { $0["Mailbox-Type"] } == [nil, nil, nil, nil, nil, "Array<Job>", "a b", "%41"])
    #expect(
      headers.map { $0["Mailbox-Type-Encoded"] } == [
        "%20Job", "Job%0A", "Job%0D%0AX-Evil%3A%201", "%09Job", "%C3%89t%C3%A9", nil, nil, nil,
      ])

    // Type headers from a third party that name no tag: terminated, never enqueued.
    let bad = [
      #"{"Mailbox-Type-Encoded":"%FF"}"#, #"{"Mailbox-Type-Encoded":"a b"}"#,
      #"{"Mailbox-Type-Encoded":"x%00y"}"#, #"{"Mailbox-Type":"A","Mailbox-Type-Encoded":"B"}"#,
    ].map { #"{"id":"\#(UUID().uuidString.lowercased())","message":2,"headers":\#($0)}"# + "\n" }
    try NATSBridge.tool(
      server, ["publish", "--subject", Self.subject], stdin: Data(bad.joined().utf8))

    let incoming = try container.rawMailbox(namespace: "in")
    let (settled, stderr) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: tags.count)
    #expect(settled, "\(stderr)")
    #expect(try ids.map { try incoming.inspector.envelope($0)?.messageType } == tags)
    for why in [
      "its Mailbox-Type-Encoded header is not UTF-8 once decoded",
      "its Mailbox-Type-Encoded header is not percent-encoded",
      "its type tag holds a NUL character, which no command line can carry",
      "it has both a Mailbox-Type and a Mailbox-Type-Encoded header",
    ] {
      #expect(stderr.contains(" terminated: \(why)"), "\(stderr)")
    }
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A priority level crosses the bridge, and one that is not a level is terminated`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let outgoing = try container.rawMailbox(namespace: "out")
    let ids = try [0, 5, 9].map {
      try outgoing.enqueue(Data("\($0)".utf8), priority: $0).id.uuidString.lowercased()
    }
    let stored = try NATSBridge.forward(
      container, namespace: "out", to: server, subject: Self.subject)
    #expect(
      stored.map { ($0["headers"] as? [String: String])?["Mailbox-Priority"] } == ["9", nil, "0"])

    let bad = ["10", "x", "-1"].map {
      #"{"id":"\#(UUID().uuidString.lowercased())","message":1,"#
        + #""headers":{"Mailbox-Priority":"\#($0)"}}"# + "\n"
    }
    try NATSBridge.tool(
      server, ["publish", "--subject", Self.subject], stdin: Data(bad.joined().utf8))
    let incoming = try container.rawMailbox(namespace: "in")
    let (settled, stderr) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 3)
    #expect(settled, "\(stderr)")
    let pending = try incoming.inspector.entries(in: [.pending])
    #expect(pending.map { $0.id?.uuidString.lowercased() } == ids.reversed())
    #expect(pending.map(\.priority) == [9, 5, 0])
    #expect(
      stderr.components(separatedBy: "header is not a level from 0 to 9").count == 4, "\(stderr)")
  }
}
