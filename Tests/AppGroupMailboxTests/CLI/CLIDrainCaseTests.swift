import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Cases C20-C22 and the ends of drain's guarantee: stdout hands a line off, `--output FILE`
/// keeps at-least-once to disk, `--exec` handlers are finished when they exit, SIGHUP stops
/// cleanly, and a reader that goes away (EPIPE) stops claiming.
@Suite struct CLIDrainCaseTests {
  @Test func `C20 a line written into a pipe is handed off, as help says; --output keeps all 99`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 99)
    let drain = ([Mailboxctl.url.path, "drain"] + container.arguments()).joined(separator: " ")
    // The reader takes its one line only after drain has exited (99 lines fit the pipe's
    // buffer): it waits for the file drain's shell touches, not for a fixed time, which a
    // loaded machine outran (drain was still writing when the reader left: EPIPE).
    let done = container.url.appendingPathComponent("drained").path
    let piped = try Processes.start(
      URL(fileURLWithPath: "/bin/sh"),
      [
        "-c",
        "{ \(drain); touch '\(done)'; } | "
          + "(while [ ! -e '\(done)' ]; do sleep 0.05; done; head -n 1)",
      ]
    ).finish()
    #expect(piped.status == 0)
    #expect(piped.lines.count == 1)
    #expect(
      drainSummary(piped.stderr) == "mailboxctl: drain: delivered 99, released 0, quarantined 0")
    let help = try Mailboxctl.run(["drain", "--help"])
    #expect(help.stdout.contains("A line written to stdout is handed off"))
    #expect(help.stdout.contains("--output FILE"))

    let again = try container.enqueueNumbered(count: 99)
    let file = container.url.appendingPathComponent("out.jsonl")
    let kept = try Mailboxctl.run(["drain"] + container.arguments() + ["--output", file.path])
    #expect(kept.status == 0)
    #expect(kept.stdout == "")
    #expect(
      drainSummary(kept.stderr) == "mailboxctl: drain: delivered 99, released 0, quarantined 0")
    let lines = try jsonLines(String(contentsOf: file, encoding: .utf8))
    #expect(lines.map { $0["id"] as? String } == again.map { $0.uuidString.lowercased() })
    #expect(lines.map { ($0["message"] as? [String: Int])?["n"] } == Array(0..<99))
    #expect(try container.remaining().isEmpty)
    #expect(ids.count == 99)
  }

  @Test func `--output ends a cut-short last line before appending`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 1)
    let file = container.url.appendingPathComponent("out.jsonl")
    try Data("{\"id\":\"cut".utf8).write(to: file)
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--output", file.path])
    #expect(result.status == 0)
    let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 2)
    #expect(lines[0] == "{\"id\":\"cut")
    #expect(lines[1].hasPrefix("{\"id\":\"\(ids[0].uuidString.lowercased())\""))
  }

  @Test func `C21 a handler that leaves a background process is acknowledged when it exits`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let started = Date()
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--handler-timeout", "2", "--exec", "sh", "-c",
        "sleep 30 </dev/null >/dev/null 2>&1 & exit 0",
      ], deadline: 25)
    #expect(result.status == 0)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 1, released 0, quarantined 0")
    // Well before the background sleep ends (a bound against hanging, not a timing target).
    #expect(Date().timeIntervalSince(started) < 25)
    #expect(try container.remaining().isEmpty)
  }

  @Test func `A handler timeout signals the handler's whole process group`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let marker = container.url.appendingPathComponent("child.pid")
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--handler-timeout", "1", "--retry-jitter", "0", "--exec", "sh", "-c",
        "sleep 300 & echo $! > '\(marker.path)'; wait",
      ], deadline: 60)
    #expect(result.status == 75)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 0, released 1, quarantined 0")
    let pid = try #require(
      Int32(
        String(contentsOf: marker, encoding: .utf8).trimmingCharacters(
          in: .whitespaces
            .union(.newlines))))
    // The background sleep was in the group: it is gone (kill(pid, 0) fails with ESRCH).
    #expect(waitUntil(deadline: 30) { kill(pid, 0) != 0 })
    #expect(try container.remaining().map(\.state) == [.delayed])
  }

  @Test func `C22 SIGHUP is handled like SIGTERM: the running handler's result is applied`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let started = container.url.appendingPathComponent("started")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--exec", "sh", "-c", "touch '\(started.path)'; sleep 2; exit 0",
      ])
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: started.path) })
    drain.signal(SIGHUP)
    let result = try drain.finish()
    #expect(result.status == 0)
    #expect(result.reason == .exit)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 1, released 0, quarantined 0")
    #expect(result.stderr.contains("; stopped by SIGHUP\n"))
    #expect(try container.remaining().isEmpty)
    #expect(container.names("claimed").isEmpty)
  }

  @Test func `A drain whose stdout fails exits 74 and puts the message back uncounted`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 2)
    let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
    let result = try Mailboxctl.run(["drain"] + container.arguments(), stdout: full)
    #expect(result.status == 74)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: writing stdout failed: No space left on device (errno 28); "
          + "the messages not written were put back, their delivery not counted\n"))
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [0, 0])
  }

  @Test func `A reader that closed stdout (EPIPE) stops drain and the message is put back`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 3)
    var fds: [Int32] = [-1, -1]
    try #require(pipe(&fds) == 0)
    close(fds[0])
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments(),
      stdout: FileHandle(fileDescriptor: fds[1], closeOnDealloc: true))
    #expect(result.status == 74)
    #expect(result.reason == .exit)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: stdout was closed by its reader (EPIPE): stopped claiming; "
          + "the messages not written were put back, their delivery not counted\n"))
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [0, 0, 0])
  }
}
