import AppGroupMailbox
import Foundation

/// Seconds before a message whose handler failed on delivery `deliveryCount` may be delivered
/// again: 1, 2, 4, ... doubling, at most 300.
///
/// This is the one place the retry delay is decided. Until the mailbox supports delayed
/// delivery, ``RetrySchedule`` keeps the delay in this process; with delayed delivery,
/// ``RetrySchedule/releaseAfterFailure(_:)`` releases with this delay instead.
func retryDelay(afterDelivery deliveryCount: Int) -> TimeInterval {
  let exponent = min(max(deliveryCount - 1, 0), 16)
  return min(300, Double(1 << exponent))
}

/// Messages this drain released after a failed handler, and when each may be claimed again.
///
/// Without `--follow` a released message is not claimed again in the same run (it waits for the
/// next run), so a failing handler neither spins nor blocks the messages behind it. With
/// `--follow` it becomes eligible after ``retryDelay(afterDelivery:)``.
struct RetrySchedule {
  /// False: never again in this run; true: after the retry delay.
  var retryInThisRun: Bool
  private var notBefore: [UUID: Date] = [:]

  init(retryInThisRun: Bool) { self.retryInThisRun = retryInThisRun }

  /// Releases `claim` after its handler failed and records when it may be claimed again.
  /// - Throws: the release's ``AppGroupMailboxError``.
  mutating func releaseAfterFailure(_ claim: AppGroupRawMailbox.Claim) throws {
    try claim.release()
    notBefore[claim.id] =
      retryInThisRun
      ? Date().addingTimeInterval(retryDelay(afterDelivery: claim.deliveryCount))
      : Date.distantFuture
  }

  /// The ids not to claim now; forgets those whose delay is over.
  mutating func skipped(now: Date = Date()) -> Set<UUID> {
    notBefore = notBefore.filter { $0.value > now }
    return Set(notBefore.keys)
  }

  /// When the next postponed message becomes eligible, if any does in this run.
  var nextEligible: Date? {
    notBefore.values.filter { $0 != .distantFuture }.min()
  }
}
