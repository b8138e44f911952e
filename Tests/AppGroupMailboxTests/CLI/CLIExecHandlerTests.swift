import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// How `drain --exec` runs handlers: their input when they do not read it all, and their exit
/// status whatever the disposition mailboxctl inherited.
@Suite struct CLIExecHandlerTests {
  /// A JSON string of `count` bytes, more than a pipe holds (64 KiB, pipe(7)) when large.
  func payload(_ count: Int) -> Data {
    Data(("\"" + String(repeating: "x", count: count - 2) + "\"").utf8)
  }

  @Test
  func `A handler that leaves its unread stdin to a process it started still counts when it exits`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-payload-bytes", "1048576"])
    try #require(created.status == 0, "\(created.stderr)")
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 1_048_576))
    try mailbox.enqueue(payload(600_000))
    try mailbox.enqueue(payload(10))
    let pids = container.url.appendingPathComponent("pids")
    // The background sleep (given the handler's stdin through fd 3: an asynchronous list's
    // own stdin is /dev/null, POSIX sh 2.9.3) keeps the read end of the pipe open and never reads it, so the
    // writer of the 600 KB payload stays blocked on a full pipe after the handler exited.
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments()
        + [
          "--exec", "sh", "-c",
          "exec 3<&0; sleep 120 <&3 >/dev/null 2>&1 & echo $! >> '\(pids.path)'; exit 0",
        ],
      deadline: 60)
    let leftovers = (try? String(contentsOf: pids, encoding: .utf8)) ?? ""
    for pid in leftovers.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.contains("drain: delivered 2, released 0, quarantined 0"), "\(result.stderr)")
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
  }

  @Test func `A handler that reads part of its input and exits 0 has its message acknowledged`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-payload-bytes", "1048576"])
    try #require(created.status == 0, "\(created.stderr)")
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 1_048_576))
    try mailbox.enqueue(payload(300_000))
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", "head", "-c", "10"], deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "\"xxxxxxxxx")
    #expect(
      result.stderr.contains("drain: delivered 1, released 0, quarantined 0"), "\(result.stderr)")
    #expect(container.names("claimed").isEmpty)
  }

  @Test
  func `A failing handler is released, not acknowledged, when drain inherits SIGCHLD ignored`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for index in 1...3 { try mailbox.enqueue(Data("\(index)".utf8)) }
    // An ignored disposition survives execve(2): the kernel then reaps the handlers itself, and
    // each exit status used to read as 0. (dash's `trap '' CHLD` does not ignore it.)
    let result = try Processes.start(
      URL(fileURLWithPath: "/usr/bin/python3"),
      [
        "-c",
        "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
          + "os.execv(sys.argv[1], sys.argv[1:])",
        Mailboxctl.url.path, "drain",
      ] + container.arguments() + ["--exec", "sh", "-c", "exit 1"]
    ).finish(deadline: 60)
    #expect(result.status == 75, "\(result.stderr)")
    #expect(result.stderr.contains("handler exit status 1"), "\(result.stderr)")
    #expect(
      result.stderr.contains("drain: delivered 0, released 3, quarantined 0"), "\(result.stderr)")
    #expect(try mailbox.inspector.status().depth == 3)
  }
}
