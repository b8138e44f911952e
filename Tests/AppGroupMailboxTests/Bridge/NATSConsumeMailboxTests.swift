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
}
