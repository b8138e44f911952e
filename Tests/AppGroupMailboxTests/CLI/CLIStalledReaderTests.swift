import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// `drain` and `watch` to a stdout or `--output` reader that stalls. Found by an adversarial session: a
/// write(2) blocked on a full pipe, and the open(2) of a FIFO nobody reads, ignored every stop
/// signal (they were restarted after the handler ran); a non-blocking stdout pipe from the
/// parent ended drain with EAGAIN (exit 74) when its reader was slower than drain.
@Suite struct CLIStalledReaderTests {
  /// Enqueues `count` messages of about 1 KB; returns their ids.
  func fill(_ container: TemporaryContainer, count: Int) throws -> [UUID] {
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 1_000))
    let pad = String(repeating: "p", count: 1_000)
    return try (0..<count).map {
      try mailbox.enqueue(Data(#"{"n":\#($0),"pad":"\#(pad)"}"#.utf8)).id
    }
  }

  /// The kernel function the main thread of process `pid` sleeps in (/proc/PID/wchan), or "":
  /// `pipe_write` (`anon_pipe_write` since Linux 6.x) for a write to a full pipe,
  /// `wait_for_partner` for the open of a FIFO without a reader (fs/pipe.c), a function of
  /// poll(2) (`do_sys_poll`, `poll_schedule_timeout`) for a wait in poll.
  func sleepingIn(_ pid: pid_t) -> String {
    (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)) ?? ""
  }

  /// Starts `mailboxctl arguments` with `stdout` as its standard output; stderr to a file.
  func start(_ arguments: [String], stdout: FileHandle, in container: TemporaryContainer) throws
    -> (Process, URL)
  {
    let process = Process()
    process.executableURL = Mailboxctl.url
    process.arguments = arguments
    process.standardOutput = stdout
    let errors = container.url.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
    process.standardError = try FileHandle(forWritingTo: errors)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return (process, errors)
  }

  /// Every whole line in `out` is a message acknowledged; the one cut short went back with its
  /// delivery count unchanged, as did everything after it (of `ids`, in order).
  func expectWholeLinesDelivered(_ out: Pipe, _ ids: [UUID], _ container: TemporaryContainer)
    throws
  {
    let lines = out.fileHandleForReading.readDataToEndOfFile().split(
      separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let whole = lines.count - 1
    let left = try container.remaining()
    #expect(whole > 0 && whole + left.count == ids.count)
    #expect(left.map(\.id) == Array(ids[whole...]))
    #expect(left.allSatisfy { $0.state == .pending && $0.deliveryCount == 0 })
  }

  /// Waits for `process` to exit within `deadline` seconds (a hang fails); returns its status.
  func finish(_ process: Process, deadline: TimeInterval) throws -> Int32 {
    guard waitUntil(deadline: deadline, { !process.isRunning }) else {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ProcessTimeout(arguments: process.arguments ?? [])
    }
    process.waitUntilExit()
    return process.terminationStatus
  }

  @Test func `SIGTERM stops a drain whose stdout reader stopped reading`() throws {
    let container = try TemporaryContainer()
    let ids = try fill(container, count: 200)
    let out = Pipe()
    let (process, errors) = try start(
      ["drain"] + container.arguments(), stdout: out.fileHandleForWriting, in: container)
    try out.fileHandleForWriting.close()
    // The pipe is full: drain is blocked in write(2).
    #expect(
      waitUntil(deadline: 60) { sleepingIn(process.processIdentifier).hasSuffix("pipe_write") })
    process.interrupt()  // SIGINT
    let status = try finish(process, deadline: 30)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 130, "\(stderr)")
    #expect(stderr.hasSuffix("; stopped by SIGINT\n"), "\(stderr)")
    try expectWholeLinesDelivered(out, ids, container)
  }

  /// Named at stop 34: `--timeout` was looked at before each claim only, so a drain blocked in
  /// a write to a reader that stopped reading never ended, holding the message (a systemd unit
  /// with `--timeout` ran on). The line gets `--shutdown-timeout` more, then goes back.
  @Test func `--timeout ends a drain whose stdout reader stopped reading`() throws {
    let container = try TemporaryContainer()
    let ids = try fill(container, count: 200)
    let out = Pipe()
    let (process, errors) = try start(
      ["drain"] + container.arguments() + ["--timeout", "1", "--shutdown-timeout", "1"],
      stdout: out.fileHandleForWriting, in: container)
    try out.fileHandleForWriting.close()
    // The deadline bounds a hang: without the fix drain stays in write(2) for ever.
    let status = try finish(process, deadline: 60)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 74, "\(stderr)")
    #expect(
      stderr.contains(
        "mailboxctl: error: drain: stdout's reader did not take the line being written within "
          + "--shutdown-timeout after --timeout: stopped; the messages not written were put "
          + "back, their delivery not counted\n"),
      "\(stderr)")
    try expectWholeLinesDelivered(out, ids, container)
  }

  /// Found by an adversarial review: `claim` set no signal handlers, so SIGTERM while its
  /// write waited for a reader ended it at once, leaving every message it had not printed
  /// claimed with a delivery counted (dead letters, with one delivery allowed, after the lease).
  @Test
  func `SIGTERM stops a claim whose reader stopped reading, putting back what it did not print`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try fill(container, count: 200)
    let out = Pipe()
    let (process, errors) = try start(
      ["claim"] + container.arguments() + ["--limit", "200"], stdout: out.fileHandleForWriting,
      in: container)
    try out.fileHandleForWriting.close()
    #expect(
      waitUntil(deadline: 60) { sleepingIn(process.processIdentifier).hasSuffix("pipe_write") })
    process.terminate()  // SIGTERM
    let status = try finish(process, deadline: 30)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    // Every whole line printed is a claim the reader holds; the rest went back uncounted.
    let lines = out.fileHandleForReading.readDataToEndOfFile().split(
      separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let whole = lines.count - 1
    #expect(whole > 0 && whole < ids.count)
    #expect(
      stderr.hasSuffix(
        "mailboxctl: claim: stopped by SIGTERM; \(ids.count - whole) of \(ids.count) claimed "
          + "messages not printed, put back, their delivery not counted\n"))
    let left = try container.remaining()
    let claimed: Set<UUID> = Set(left.filter { $0.state == .claimed }.compactMap(\.id))
    #expect(claimed == Set(ids[..<whole]))
    let pending = left.filter { $0.state == .pending }
    #expect(pending.map(\.id) == Array(ids[whole...]))
    #expect(pending.allSatisfy { $0.deliveryCount == 0 })
  }

  /// Found by an adversarial review: to stdout (and --output) drain claimed message after
  /// message without looking at `--timeout` while any was pending, so a slow reader kept it
  /// running until the mailbox was empty.
  @Test func `--timeout ends a drain to stdout with messages still pending`() throws {
    let container = try TemporaryContainer()
    let ids = try fill(container, count: 300)
    let out = Pipe()
    let started = Date()
    let (process, errors) = try start(
      ["drain"] + container.arguments() + ["--timeout", "0.5"], stdout: out.fileHandleForWriting,
      in: container)
    try out.fileHandleForWriting.close()
    // Blocked on the full pipe (about 60 lines) until the time is up; then the reader reads all.
    #expect(
      waitUntil(deadline: 60) { sleepingIn(process.processIdentifier).hasSuffix("pipe_write") })
    #expect(waitUntil(deadline: 60) { Date().timeIntervalSince(started) >= 1 })
    let lines = out.fileHandleForReading.readDataToEndOfFile().split(
      separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let status = try finish(process, deadline: 30)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    let delivered = lines.count - 1
    #expect(delivered > 0 && delivered < ids.count)
    #expect(try container.remaining().map(\.id) == Array(ids[delivered...]))
  }

  @Test func `A non-blocking stdout pipe is waited for, not failed with EAGAIN`() throws {
    let container = try TemporaryContainer()
    let ids = try fill(container, count: 200)
    let out = Pipe()
    let writer = out.fileHandleForWriting.fileDescriptor
    #expect(fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK) == 0)
    let (process, errors) = try start(
      ["drain"] + container.arguments(), stdout: out.fileHandleForWriting, in: container)
    try out.fileHandleForWriting.close()
    // The pipe is full: drain waits for room (poll) instead of failing.
    #expect(
      waitUntil(deadline: 60) {
        sleepingIn(process.processIdentifier).contains("poll") || !process.isRunning
      })
    let output = out.fileHandleForReading.readDataToEndOfFile()
    let status = try finish(process, deadline: 60)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    #expect(output.split(separator: UInt8(ascii: "\n")).count == ids.count)
    #expect(try container.remaining().isEmpty)
  }

  @Test func `SIGTERM stops a watch whose stdout reader stopped reading`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100_000))
    let out = Pipe()
    let writer = out.fileHandleForWriting.fileDescriptor
    // One page (the smallest pipe, pipe(7)): a few dozen lines fill it. F_SETPIPE_SZ is
    // F_LINUX_SPECIFIC_BASE + 7 = 1031 (fcntl(2), linux/fcntl.h); Glibc does not export it.
    #expect(fcntl(writer, 1031, 4096) >= 4096)
    let (process, errors) = try start(
      ["watch"] + container.arguments(), stdout: out.fileHandleForWriting, in: container)
    try out.fileHandleForWriting.close()
    #expect(waitUntil(deadline: 60) { (try? String(contentsOf: errors, encoding: .utf8)) != "" })
    // Each enqueue wakes it; once the pipe is full it is blocked in write(2).
    #expect(
      try waitUntil(deadline: 120) {
        try mailbox.enqueue(Data("1".utf8))
        return sleepingIn(process.processIdentifier).hasSuffix("pipe_write")
      })
    process.terminate()  // SIGTERM
    let status = try finish(process, deadline: 30)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    #expect(!stderr.contains("error"), "\(stderr)")
  }

  /// Found by the review of the change above: with stderr on the same stalled pipe (`2>&1 |
  /// reader`), the summary written after the stdout line was given up blocked for ever; and
  /// `watch --timeout` had no end for a write blocked on a reader that stopped reading.
  @Test func `--timeout also ends a write to a stalled stderr, and a watch's to a stalled stdout`()
    throws
  {
    let container = try TemporaryContainer()
    // Output lines of about 4,096 bytes (PIPE_BUF: each written whole or not at all, pipe(7))
    // fill the pipe to its last byte, so the summary finds no room either (the sizes the review
    // reproduced it with).
    let pad = String(repeating: "p", count: 3_913)
    let producer = try container.rawMailbox(limits: .init(maxMessages: 1_000))
    for number in 1...40 {
      try producer.enqueue(Data(#"{"n":\#(number),"pad":"\#(pad)"}"#.utf8))
    }
    let out = Pipe()
    let process = Process()
    process.executableURL = Mailboxctl.url
    process.arguments =
      ["drain"] + container.arguments() + ["--timeout", "1", "--shutdown-timeout", "1"]
    process.standardOutput = out.fileHandleForWriting
    process.standardError = out.fileHandleForWriting
    process.standardInput = FileHandle.nullDevice
    try process.run()
    try out.fileHandleForWriting.close()
    // The deadline bounds a hang: before, drain stayed in the summary's write(2) for ever.
    #expect(try finish(process, deadline: 60) == 74)
    withExtendedLifetime(out) {}
    let left = try container.remaining()
    #expect(left.allSatisfy { $0.state == .pending && $0.deliveryCount == 0 })

    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100_000))
    let watched = Pipe()
    let writer = watched.fileHandleForWriting.fileDescriptor
    // One page (the smallest pipe, pipe(7)); F_SETPIPE_SZ = 1031 (fcntl(2)).
    #expect(fcntl(writer, 1031, 4096) >= 4096)
    let (watch, errors) = try start(
      ["watch"] + container.arguments() + ["--timeout", "3"],
      stdout: watched.fileHandleForWriting, in: container)
    try watched.fileHandleForWriting.close()
    #expect(waitUntil(deadline: 60) { (try? String(contentsOf: errors, encoding: .utf8)) != "" })
    // Each enqueue wakes it until the pipe is full (or its --timeout ends it first).
    _ = try waitUntil(deadline: 60) {
      try mailbox.enqueue(Data("1".utf8))
      return !watch.isRunning || sleepingIn(watch.processIdentifier).hasSuffix("pipe_write")
    }
    let status = try finish(watch, deadline: 60)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    #expect(!stderr.contains("error"), "\(stderr)")
    withExtendedLifetime(watched) {}
  }

  /// Found by the same review: the deadline was looked at before each write, so a line whose
  /// claim ended after --timeout plus --shutdown-timeout was put back, though nothing blocked
  /// (drain exited 74 "stdout's reader did not take the line" with stdout on /dev/null).
  @Test func `A --timeout drain to a stdout that takes every line exits 0`() throws {
    let container = try TemporaryContainer()
    _ = try fill(container, count: 300)
    let (process, errors) = try start(
      ["drain"] + container.arguments() + ["--timeout", "0.05", "--shutdown-timeout", "0.000001"],
      stdout: FileHandle.nullDevice, in: container)
    let status = try finish(process, deadline: 60)
    let stderr = try String(contentsOf: errors, encoding: .utf8)
    #expect(status == 0, "\(stderr)")
    #expect(!stderr.contains("did not take"), "\(stderr)")
  }
}
