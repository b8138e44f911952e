import MailboxLocks

/// How a program ends a wait for the namespace lock (flock(2) on `state`, the lock every
/// enqueue and every move that changes the depth takes) that another process holds for long: a
/// stopped (SIGSTOP) producer, or someone holding it by hand (docs/FORMAT.md). Without a check
/// set, a wait lasts until the lock is free, signals or not.
///
/// With a check set (``decide(with:)``), it is asked before each wait and again whenever a
/// signal interrupts one: ``Verdict/wait`` blocks in flock(2), ``Verdict/poll`` tries the lock
/// without blocking every 10 ms (asking again before each try), ``Verdict/giveUp`` tries it once
/// more and, when another process still holds it, makes the operation throw
/// ``SystemCallError`` (`flock`, `EINTR`) having changed nothing. A free lock is always taken.
/// `mailboxctl drain` polls once a stop signal came and gives up on a second one or once its
/// `--shutdown-timeout` has passed since the first.
///
/// Thread safety: the check may be set from any thread; it runs on the thread that waits.
package enum LockWait {
  /// What a wait for the lock does now.
  package enum Verdict: Sendable {
    /// Block until the lock is free or a signal comes.
    case wait
    /// Try without blocking every 10 ms, asking again before each try.
    case poll
    /// Stop waiting: unless the lock is free now, the operation fails with `EINTR`.
    case giveUp
  }

  // `Locked`, not a bare `Mutex`: its lock carries the ThreadSanitizer annotations that a
  // futex-based `Mutex` lacks (the sanitizer run reported this global as a race).
  private static let check = Locked<(@Sendable () -> Verdict)?>(nil)

  /// Sets the check asked before and during a wait (nil: every wait blocks until the lock is
  /// free).
  package static func decide(with check: (@Sendable () -> Verdict)?) {
    Self.check.withLock { $0 = check }
  }

  /// The check set, if any.
  static var current: (@Sendable () -> Verdict)? { check.withLock { $0 } }
}
