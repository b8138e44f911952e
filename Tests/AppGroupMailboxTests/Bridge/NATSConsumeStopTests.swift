import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// consume.py's stop while an enqueue waits for room (named by a review): a stop waited for the
/// enqueues in progress, so one waiting with `--wait 3600` held it an hour, and a second signal
/// did not hurry it.
extension NATSConsumeStartTests {
  /// `group`: the first signal is a terminal's Ctrl-C, SIGINT to consume.py's whole process
  /// group (found by a review: it also killed the enqueues, which consume.py then gave back
  /// with a retry delay, saying it waited for them).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: [false, true])
  func `A second stop signal stops an enqueue waiting for room and gives its message back`(
    group: Bool
  ) throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let mailbox = try container.rawMailbox(
      namespace: "in", limits: .init(maxMessages: 1))
    let blocker = try mailbox.enqueue(Data("1".utf8)).id
    // Says when an enqueue of a message (the one with --id) starts, then is mailboxctl.
    let counting = standIn("counting-mailboxctl", in: container) { path in
      """
      for argument in "$@"; do
        [ "$argument" = --id ] && echo started >> '\(path).started'
      done
      exec '\(Mailboxctl.url.path)' "$@"
      """
    }
    // An ack wait of 600 s: a message not given back would not come again within the test.
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: counting,
      options: ["--ack-wait", "600"], enqueueArguments: ["--wait", "3600"])
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let id = UUID().uuidString.lowercased()
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data((#"{"id":"\#(id)","message":2}"# + "\n").utf8))
    let started = URL(fileURLWithPath: counting + ".started")
    #expect(waitUntil(deadline: 60) { text(started) == "started\n" }, "\(text(stderr))")
    if group {
      // Foundation's Process starts it as the leader of a process group of its own, as a
      // terminal's foreground job is.
      try #require(getpgid(process.processIdentifier) == process.processIdentifier)
      kill(-process.processIdentifier, SIGINT)
    } else {
      kill(process.processIdentifier, SIGTERM)
    }
    #expect(
      waitUntil(deadline: 60) {
        text(stderr).contains(
          "consume.py: stopping: waiting for 1 enqueue in progress (a second stop signal stops "
            + "them)\n")
      }, "\(text(stderr))")
    expectStopped(process, by: SIGTERM, stderr: stderr)
    #expect(
      text(stderr).contains(
        "consume.py: enqueue of message \(id) stopped by a second stop "
          + "signal: given back\n"), "\(text(stderr))")
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.id) == [blocker])
    // Room made, the next run enqueues it at once: it was given back, not left to the ack wait.
    try #require(try mailbox.claimPending(limit: 1).first).acknowledge()
    let (settled, consumed) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 1)
    #expect(settled, "\(consumed)")
    #expect(
      try mailbox.inspector.entries(in: [.pending]).map { $0.id?.uuidString.lowercased() }
        == [id])
  }
}
