import Foundation
import Glibc

/// How `drain --follow` and `watch` wait for a mailbox to change. Wake-ups are hints: after one,
/// the caller rescans. An implementation must never miss a change made after its previous
/// return (or its creation), may wake spuriously, and returns early when `stop` is posted.
///
/// The polling implementation below is the interim one; the inotify watcher of the library
/// replaces it behind this protocol.
protocol WorkWaiter: Sendable {
  /// Waits up to `timeout` seconds for the pending area to change; true when it may have
  /// changed, false on timeout or when woken by a stop request.
  func waitForWork(timeout: TimeInterval) -> Bool
}

/// Polls the listing of `pending/` every `interval` seconds and reports a change when the set of
/// names differs from the one seen at its previous return.
final class PollingWorkWaiter: WorkWaiter, @unchecked Sendable {
  private let pendingPath: String
  private let interval: TimeInterval
  private let wakeup: Wakeup
  private let shouldStop: @Sendable () -> Bool
  /// Only touched by the one thread that waits.
  private var baseline: Int

  init(
    mailboxDirectory: URL, interval: TimeInterval = 0.05, wakeup: Wakeup,
    shouldStop: @escaping @Sendable () -> Bool
  ) {
    self.pendingPath = mailboxDirectory.appendingPathComponent("pending").path
    self.interval = interval
    self.wakeup = wakeup
    self.shouldStop = shouldStop
    self.baseline = 0
    self.baseline = fingerprint()
  }

  func waitForWork(timeout: TimeInterval) -> Bool {
    let limit = Date().addingTimeInterval(timeout)
    while !shouldStop() {
      let current = fingerprint()
      if current != baseline {
        baseline = current
        return true
      }
      let left = limit.timeIntervalSinceNow
      if left <= 0 { return false }
      wakeup.wait(seconds: min(interval, left))
    }
    return false
  }

  /// A hash of the sorted names in `pending/` (0 when it cannot be listed).
  private func fingerprint() -> Int {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: pendingPath) else {
      return 0
    }
    var hasher = Hasher()
    hasher.combine(names.count)
    for name in names.sorted() { hasher.combine(name) }
    return hasher.finalize()
  }
}
