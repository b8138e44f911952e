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
    #expect(finished.status == 74, "\(finished.stderr)")
    #expect(
      finished.stderr.contains(
        "gave up waiting for the mailbox's lock (the flock(2) on its state file), which "
          + "another process holds\n"), "\(finished.stderr)")
    let left = try container.rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.id) == [id])
    #expect(left.map(\.state) == [.claimed])
  }

  /// Whether process `pid` is blocked in flock(2) now (/proc/PID/syscall: the number of the
  /// system call it waits in first; proc(5)).
  static func isInFlock(_ pid: Int32) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8),
      let number = text.split(separator: " ").first.flatMap({ Int($0) })
    else { return false }
    return number == Self.flockNumber
  }

  /// flock(2)'s system call number (Linux's unistd.h; Swift's Glibc does not export SYS_flock).
  #if arch(x86_64)
    static let flockNumber = 73
  #elseif arch(arm64)
    static let flockNumber = 32
  #endif

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
    #expect(waitUntil(deadline: 60) { Self.isInFlock(pid) }, "\(claim.stderr)")
    claim.signal(SIGTERM)
    // 30 s: a bound on a hang (the lock stays held until the end of the test).
    let finished = try claim.finish(deadline: 30)
    _ = consume lock
    #expect(finished.status == 74, "\(finished.stderr)")
    #expect(finished.stdout.isEmpty)
    #expect(
      finished.stderr.contains(
        "gave up waiting for the mailbox's lock (the flock(2) on its state file), which "
          + "another process holds\n"), "\(finished.stderr)")
    let left = try container.rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.id) == [id])
    #expect(left.map(\.state) == [.delayed])
  }
}
