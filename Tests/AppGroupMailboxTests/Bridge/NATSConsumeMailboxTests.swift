import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// consume.py and the receiving mailbox it does not own (found by a review of its argument
/// checks): a mailbox deleted while it ran was made again by the next enqueue with the default
/// bounds, and a message over those was terminated; a mailboxctl too old to check `--delay`
/// against the lifetime let every message be terminated.
extension NATSConsumeStartTests {
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A mailbox deleted while consume.py runs is not made again; its messages wait`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let (process, stderr) = try startConsume(server.url, stream: "MAILBOX", in: container)
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let directory = container.url.appendingPathComponent("AppGroupMailbox/in")
    #expect(waitUntil(deadline: 60) { consumerExists(on: server) }, "\(text(stderr))")
    try FileManager.default.removeItem(at: directory)
    let id = UUID().uuidString.lowercased()
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data((#"{"id":"\#(id)","message":1}"# + "\n").utf8))
    #expect(
      waitUntil(deadline: 60) { text(stderr).contains("(exit 66), retrying in 2 s: ") },
      "\(text(stderr))")
    #expect(!FileManager.default.fileExists(atPath: directory.path))
    // Made again by its operator, the mailbox gets the message at the next try.
    let made = try Mailboxctl.run(["create"] + container.arguments(namespace: "in"))
    #expect(made.status == 0, "\(made.stderr)")
    let mailbox = try container.rawMailbox(namespace: "in")
    #expect(
      waitUntil(deadline: 60) {
        (try? mailbox.inspector.entries(in: [.pending]).map { $0.id?.uuidString.lowercased() })
          == [id]
      }, "\(text(stderr))")
    #expect(!text(stderr).contains("terminated"), "\(text(stderr))")
    expectStopped(process, by: SIGTERM, stderr: stderr)
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A mailboxctl without --dry-run is refused with --delay, and taken without`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    // This mailboxctl with its help as an older one printed it.
    let older = standIn("older-mailboxctl", in: container) { _ in
      "'\(Mailboxctl.url.path)' \"$@\" | grep -v -e --dry-run -e --no-create"
    }
    let (refused, refusedStderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: older,
      enqueueArguments: ["--delay", "10"])
    expectEnded(
      refused, status: 78, stderr: refusedStderr,
      saying: "consume.py: --mailboxctl \(older) is older than consume.py (its enqueue has no "
        + "--dry-run), so --delay cannot be checked against the mailbox's message lifetime "
        + "(past it, every message would be terminated): upgrade it, or leave that option out\n")
    let (taken, takenStderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: older)
    defer { if taken.isRunning { kill(taken.processIdentifier, SIGKILL) } }
    #expect(waitUntil(deadline: 60) { consumerExists(on: server) }, "\(text(takenStderr))")
    expectStopped(taken, by: SIGTERM, stderr: takenStderr)
  }

  /// Found by a review: an enqueue waiting for room (`--wait`) longer than the ack wait was
  /// delivered again by JetStream meanwhile, and the second copy was stored again once the
  /// first had been stored and consumed. consume.py reports the message in progress now.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A message whose enqueue outlasts the ack wait is not delivered again meanwhile`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let mailbox = try container.rawMailbox(namespace: "in", limits: .init(maxMessages: 1))
    try mailbox.enqueue(Data("0".utf8))
    // This mailboxctl, noting each enqueue it is asked for.
    let noting = standIn("noting-mailboxctl", in: container) { path in
      """
      [ "$1" = enqueue ] && echo enqueue >> '\(path).calls'
      exec '\(Mailboxctl.url.path)' "$@"
      """
    }
    let calls = URL(fileURLWithPath: noting + ".calls")
    func count() -> Int { text(calls).split(separator: "\n").count }
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: noting,
      options: ["--ack-wait", "2"], enqueueArguments: ["--wait", "60"])
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    #expect(waitUntil(deadline: 60) { consumerExists(on: server) }, "\(text(stderr))")
    let before = count()  // the start's checks (--help, --dry-run)
    let id = UUID().uuidString.lowercased()
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data((#"{"id":"\#(id)","message":1}"# + "\n").utf8))
    #expect(waitUntil(deadline: 60) { count() == before + 1 }, "\(text(stderr))")
    // Three ack waits: a correctness window (JetStream delivered it again after one).
    #expect(!waitUntil(deadline: 6) { count() > before + 1 }, "\(text(stderr))")
    let filler = try #require(try mailbox.claimPending(limit: 1).first)
    try filler.acknowledge()
    #expect(
      waitUntil(deadline: 60) {
        (try? mailbox.inspector.entries(in: [.pending]).map { $0.id?.uuidString.lowercased() })
          == [id]
      }, "\(text(stderr))")
    #expect(count() == before + 1, "\(text(stderr))")
    expectStopped(process, by: SIGTERM, stderr: stderr)
  }

  /// Found by the third review: messages fetched together waited for a free enqueue
  /// (`--parallel`) without being reported in progress, past the ack wait, and JetStream
  /// delivered them again; a copy whose first had been consumed meanwhile was stored twice.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `Messages waiting for a free enqueue are not delivered again meanwhile`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let mailbox = try container.rawMailbox(namespace: "in", limits: .init(maxMessages: 1))
    try mailbox.enqueue(Data("0".utf8))
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container,
      options: ["--ack-wait", "2", "--parallel", "1", "--batch", "16"],
      enqueueArguments: ["--wait", "60"])
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let ids = (1...3).map { _ in UUID().uuidString.lowercased() }
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data(ids.map { #"{"id":"\#($0)","message":1}"# + "\n" }.joined().utf8))
    func state() -> [String: Any] {
      NATSBridge.infoIfPresent(server, ["--name", "MAILBOX", "--durable", "local"]) ?? [:]
    }
    #expect(
      waitUntil(deadline: 60) { state()["numAckPending"] as? Int == 3 }, "\(text(stderr))")
    // Three ack waits with every message held: the first waits for room, the others for it.
    func redelivered() -> Bool { (state()["numRedelivered"] as? Int ?? 0) > 0 }
    #expect(!waitUntil(deadline: 6) { redelivered() }, "\(text(stderr))")
    // Room for one at a time: the first is stored; taken, the second is stored and the third
    // waits for room, and consume.py fetches again: JetStream delivered the third, held past
    // the ack wait, a second time then.
    var taken: [String] = []
    func takeOne() -> Bool {
      guard let claim = (try? mailbox.claimPending(limit: 1))?.first else { return false }
      try? claim.acknowledge()
      taken.append(claim.id.uuidString.lowercased())
      return true
    }
    #expect(takeOne())  // the filler
    #expect(waitUntil(deadline: 60) { takeOne() }, "\(text(stderr))")  // the first
    #expect(!waitUntil(deadline: 6) { redelivered() }, "\(state()) \(text(stderr))")
    // Then each is taken as soon as it is stored, so a second copy would find its id gone.
    #expect(
      waitUntil(deadline: 60) {
        _ = takeOne()
        let now = state()
        return taken.count >= 4 && now["numAckPending"] as? Int == 0
          && now["numPending"] as? Int == 0
      }, "\(taken) \(text(stderr))")
    #expect(Array(taken.dropFirst()) == ids, "\(taken)")
    #expect(state()["numRedelivered"] as? Int == 0, "\(state())")
    #expect((try mailbox.inspector.counts()).pending == 0)
    expectStopped(process, by: SIGTERM, stderr: stderr)
  }
}
