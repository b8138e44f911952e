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

  /// Makes the mailbox with a 1 MiB payload limit and enqueues a message of each size.
  func fill(_ container: TemporaryContainer, sizes: [Int]) throws {
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-payload-bytes", "1048576"])
    try #require(created.status == 0, "\(created.stderr)")
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 1_048_576))
    for size in sizes { try mailbox.enqueue(payload(size)) }
  }

  /// `--exec` for a handler that hands its stdin to a background sleep and exits 0 at once;
  /// the sleep's pid is appended to `pids`. The sleep gets the stdin through fd 3 (an
  /// asynchronous list's own stdin is /dev/null, POSIX sh 2.9.3) and never reads it.
  func holdingHandler(_ pids: URL) -> [String] {
    [
      "--exec", "sh", "-c",
      "exec 3<&0; sleep 120 <&3 >/dev/null 2>&1 & echo $! >> '\(pids.path)'; exit 0",
    ]
  }

  /// Kills the processes whose pids `holdingHandler` wrote.
  func killHolders(_ pids: URL) {
    let text = (try? String(contentsOf: pids, encoding: .utf8)) ?? ""
    for pid in text.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
  }

  @Test
  func `A handler that leaves its unread stdin to a process it started still counts when it exits`()
    throws
  {
    let container = try TemporaryContainer()
    try fill(container, sizes: [600_000, 10])
    let pids = container.url.appendingPathComponent("pids")
    // The background sleep keeps the read end of the pipe open and never reads it, so the
    // writer of the 600 KB payload stays blocked on a full pipe after the handler exited:
    // drain gives it up after PayloadFeed.stallLimit seconds (10) and ends.
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + holdingHandler(pids), deadline: 60)
    killHolders(pids)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.contains("drain: delivered 2, released 0, quarantined 0"), "\(result.stderr)")
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
  }

  @Test
  func `A process the handler hands its stdin to reads the whole message after the handler exits`()
    throws
  {
    let container = try TemporaryContainer()
    try fill(container, sizes: [1_000_012])
    let out = container.url.appendingPathComponent("out")
    // Before, the writer gave up what was left the moment the handler exited: the reader got
    // 0 or 65,536 bytes and a clean end of file.
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments()
        + [
          "--exec", "sh", "-c",
          "exec 3<&0; (sleep 1; wc -c <&3 > '\(out.path).part'; mv '\(out.path).part' "
            + "'\(out.path)') >/dev/null 2>&1 & exit 0",
        ],
      deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.contains("drain: delivered 1, released 0, quarantined 0"), "\(result.stderr)")
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: out.path) })
    let count = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
    #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) == "1000013")  // and the newline
  }

  @Test
  func `A stop signal ends drain at once while a process the handler left holds its stdin unread`()
    throws
  {
    let container = try TemporaryContainer()
    try fill(container, sizes: [1_000_012])
    let pids = container.url.appendingPathComponent("pids")
    let drain = try Mailboxctl.start(["drain"] + container.arguments() + holdingHandler(pids))
    defer { killHolders(pids) }
    // Acknowledged as soon as the handler exited; drain then waits for the writer.
    #expect(waitUntil(deadline: 60) { (try? container.rawMailbox().inspector.status().depth) == 0 })
    drain.signal(SIGTERM)
    // 5 s: half the writer's stall limit (10 s), which a drain that ignored the signal would
    // wait out; the bound is on that, not a latency figure.
    let result = try drain.finish(deadline: 5)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr.contains("drain: delivered 1, released 0, quarantined 0"), "\(result.stderr)")
  }

  @Test func `A handler reads its message as one line, so a shell's read takes it whole`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data(#"{"n": "a b"}"#.utf8))
    try mailbox.enqueue(Data("2".utf8))
    let out = container.url.appendingPathComponent("out")
    // Before, no newline ended the input: read(1) returned 1 at end of file and the handler
    // failed (found by a new user's trial).
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments()
        + ["--exec", "sh", "-c", "read -r line && printf '%s|' \"$line\" >> '\(out.path)'"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try String(contentsOf: out, encoding: .utf8) == #"{"n": "a b"}|2|"#)
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

  /// A thread drain cannot start (EAGAIN at the thread limit, forced here through the debug
  /// build's `MAILBOXCTL_TEST_REFUSE_THREAD`) stops it with exit 71 and every message kept.
  /// Before, the writer of a handler's input failing left the handler an empty stdin: it exited
  /// 0 and its unread message was acknowledged (found by an adversarial review under
  /// `ulimit -v`); a watcher thread failing left drain waiting for ever.
  @Test(arguments: [
    ("write a handler's input", ["--exec", "sh", "-c", "cat >> \"$0.got\""]),
    ("watch", ["--exec", "sh", "-c", "cat >> \"$0.got\""]),
    ("read the handler's answers", ["--coprocess", "cat"]),
    ("wait for wake-ups", ["--follow", "--exec", "true"]),
  ])
  func `A thread drain cannot start ends it with exit 71 and loses no message`(
    purpose: String, handler: [String]
  ) throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for index in 1...2 { try mailbox.enqueue(Data("\(index)".utf8)) }
    let handler = handler.map {
      $0.replacingOccurrences(of: "$0.got", with: container.url.path + "/got")
    }
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + handler,
      environment: ["MAILBOXCTL_TEST_REFUSE_THREAD": purpose], deadline: 60)
    #expect(result.status == 71, "\(result.stderr)")
    #expect(result.stderr.contains("cannot start a thread to \(purpose)"), "\(result.stderr)")
    #expect(try mailbox.inspector.status().depth == 2)
    #expect(container.names("claimed").isEmpty)
    if purpose != "watch" {  // that handler starts, and is killed at once: it may have begun
      #expect(!FileManager.default.fileExists(atPath: container.url.path + "/got"))
    }
  }
}
