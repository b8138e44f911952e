import AppGroupMailbox
import Foundation
import MailboxLocks

/// How a command's wait for the namespace lock (the flock(2) on `state`) ends once a stop
/// signal came, when another process holds the lock for long (stopped, or held by hand):
/// before the first stop signal it waits; after it, it polls (a lock that is only busy is taken
/// as soon as it is free), and gives up on a second signal or once `timeout` seconds have
/// passed since the first wait after the signal (``LockWait``).
///
/// Thread safety: ``verdict()`` may be called from any thread.
final class StoppingLockWait: Sendable {
  private let signals: Signals
  private let timeout: TimeInterval
  /// When a wait first asked after a stop signal.
  private let firstSeen = Locked<Date?>(nil)

  init(signals: Signals, timeout: TimeInterval) {
    self.signals = signals
    self.timeout = timeout
  }

  /// What a wait for the lock does now.
  func verdict() -> LockWait.Verdict {
    guard signals.stopCount > 0 else { return .wait }
    let seen = firstSeen.withLock { seen in
      if seen == nil { seen = Date() }
      return seen ?? Date()
    }
    let late = Date().timeIntervalSince(seen) >= timeout
    return signals.stopCount > 1 || late ? .giveUp : .poll
  }
}
