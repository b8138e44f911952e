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
}
