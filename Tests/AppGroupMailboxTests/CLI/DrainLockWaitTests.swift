import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Found by an adversarial review: while another process held the mailbox's lock (the flock(2)
/// on `state`: a stopped producer, or someone holding it by hand), drain could not be stopped;
/// its wait was retried on every signal, a second one included, until the lock was free.
@Suite struct DrainLockWaitTests {
  /// Holds the lock on `container`'s mailbox `jobs` from this process until `release()`.
  struct HeldLock: ~Copyable {
    let fd: Int32
    init(_ container: TemporaryContainer) throws {
      fd = open(container.url.path + "/AppGroupMailbox/jobs/state", O_RDONLY | O_CLOEXEC)
      try #require(fd >= 0)
      try #require(flock(fd, LOCK_EX) == 0)
    }
    deinit { close(fd) }
  }

  /// Starts a drain whose handler fails, once it has failed: its release waits for the lock.
  func drainWaitingForLock(_ container: TemporaryContainer, _ options: [String]) throws
    -> StreamingProcess
  {
    let ran = container.url.appendingPathComponent("ran")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + options + [
        "--exec", "/bin/sh", "-c", "cat >/dev/null; touch \(ran.path); exit 1",
      ])
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: ran.path) })
    return drain
  }

  @Test(arguments: [false, true])
  func `A held lock ends a drain at its shutdown timeout, or at a second signal`(
    twice: Bool
  ) throws {
    let container = try TemporaryContainer()
    let id = try container.rawMailbox().enqueue(Data("1".utf8)).id
    let lock = try HeldLock(container)
    let drain = try drainWaitingForLock(
      container, twice ? [] : ["--shutdown-timeout", "1"])
    drain.signal(SIGTERM)
    if twice {
      // Signals sent back to back may merge into one (signal(7)): send until drain ends. The
      // bound is below the default shutdown timeout (30 s): only a second signal ends it.
      #expect(
        waitUntil(deadline: 20) {
          guard drain.process.isRunning else { return true }
          drain.signal(SIGTERM)
          return false
        })
    }
    // 30 s: a bound on a hang (the lock stays held until the end of the test).
    let finished = try drain.finish(deadline: 30)
    _ = consume lock
    try expectGaveUp(finished, container, leaving: id, as: .claimed)
  }

  /// That the process exited 74 saying it gave up the lock, and left message `id` alone in the
  /// mailbox, in `state`.
  func expectGaveUp(
    _ finished: Finished, _ container: TemporaryContainer, leaving id: UUID,
    as state: AppGroupMailboxEntry.State
  ) throws {
    #expect(finished.status == 74, "\(finished.stderr)")
    #expect(
      finished.stderr.contains(
        "gave up waiting for the mailbox's lock (the flock(2) on its state file), which "
          + "another process holds\n"), "\(finished.stderr)")
    let left = try container.rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.id) == [id])
    #expect(left.map(\.state) == [state])
  }

  /// Found by a review: `mailboxctl claim` waiting for a lock another process held went on
  /// waiting past SIGTERM (its wait was retried on every signal); it now gives up at the first.
  @Test func `A held lock ends a claim at the first stop signal, nothing claimed`() throws {
    let container = try TemporaryContainer()
    let due = Date().addingTimeInterval(0.2)
    let id = try container.rawMailbox().enqueue(Data("1".utf8), notBefore: due).id
    // Once due, the claim makes it pending first, which takes the lock.
    #expect(waitUntil(deadline: 30) { Date() > due.addingTimeInterval(0.05) })
    let lock = try HeldLock(container)
    let claim = try Mailboxctl.start(["claim"] + container.arguments())
    let pid = claim.process.processIdentifier
    #expect(waitUntil(deadline: 60) { Self.isIn(pid, Self.flockNumber) }, "\(claim.stderr)")
    claim.signal(SIGTERM)
    // 30 s: a bound on a hang (the lock stays held until the end of the test).
    let finished = try claim.finish(deadline: 30)
    _ = consume lock
    #expect(finished.stdout.isEmpty)
    try expectGaveUp(finished, container, leaving: id, as: .delayed)
  }

  /// Whether process `pid` is in the system call `number` now (/proc/PID/syscall, proc(5)).
  static func isIn(_ pid: Int32, _ number: Int) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8),
      let first = text.split(separator: " ").first.flatMap({ Int($0) })
    else { return false }
    return first == number
  }

  /// The numbers of flock(2), write(2) and clock_nanosleep(2) (a lock wait polls with
  /// usleep(3)), from Linux's unistd.h: Swift's Glibc exports no SYS_ constants.
  #if arch(x86_64)
    static let flockNumber = 73
    static let writeNumber = 1
    static let sleepNumber = 230
  #elseif arch(arm64)
    static let flockNumber = 32
    static let writeNumber = 64
    static let sleepNumber = 115
  #endif

  /// Found by a review of the fix above: a claim stopped while its output waited for a reader
  /// puts back what it did not print, and that needs the lock; giving up every wait at the first
  /// signal left those messages claimed (a lease each, their delivery counted) whenever the
  /// lock was only busy, and said it had put them back. The put-back now polls: a busy lock is
  /// taken when free (`twice` false), and only a second signal gives it up, which is reported
  /// with exit 74.
  @Test(arguments: [false, true])
  func `Claims not printed at a stop signal are put back once a busy lock is free`(
    twice: Bool
  ) throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    // One line fills most of a pipe's 64 KiB, so the second one blocks: nobody reads stdout.
    let large = Data(("\"" + String(repeating: "x", count: 40_000) + "\"").utf8)
    for _ in 0..<3 { try mailbox.enqueue(large) }
    let (process, _, errPipe) = Processes.prepare(
      Mailboxctl.url, ["claim"] + container.arguments() + ["--limit", "3"], environment: [:])
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    try process.run()
    let pid = process.processIdentifier
    #expect(
      waitUntil(deadline: 60) {
        container.names("claimed").count == 3 && Self.isIn(pid, Self.writeNumber)
      })
    var lock: HeldLock? = try HeldLock(container)
    kill(pid, SIGTERM)
    #expect(waitUntil(deadline: 60) { Self.isIn(pid, Self.sleepNumber) })
    if twice {
      // Signals sent back to back may merge into one (signal(7)): send until it ends.
      #expect(
        waitUntil(deadline: 30) {
          guard process.isRunning else { return true }
          kill(pid, SIGTERM)
          return false
        })
    }
    lock = nil
    #expect(waitUntil(deadline: 30) { !process.isRunning })
    if process.isRunning { kill(pid, SIGKILL) }
    process.waitUntilExit()
    let stderr = String(
      decoding: errPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    if twice {
      #expect(process.terminationStatus == 74, "\(stderr)")
      #expect(
        stderr
          == "mailboxctl: error: claim: stopped by SIGTERM; 2 of 3 claimed messages not "
          + "printed, 0 of them put back uncounted, 2 left claimed until the lease runs out "
          + "(the put-back failed; their delivery counted)\n")
      #expect(container.names("claimed").count == 3)
    } else {
      #expect(process.terminationStatus == 0, "\(stderr)")
      #expect(
        stderr
          == "mailboxctl: claim: stopped by SIGTERM; 2 of 3 claimed messages not printed, put "
          + "back, their delivery not counted\n")
      #expect(container.names("claimed").count == 1)
      #expect(container.names("pending").count == 2)
    }
    _ = lock
  }
}
