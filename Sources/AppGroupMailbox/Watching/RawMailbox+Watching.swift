public import Foundation

extension AppGroupMailboxProtocol {
  /// When this mailbox's claims must look again at an entry they skipped for now (a hard link
  /// younger than its grace period, an entry a quarantine could not move), or nil when none
  /// waits. A loop that waits for wake-ups must not sleep past it: no file event announces
  /// that the grace period ended (``wait(timeout:)`` and ``drain(batchSize:pollingInterval:isolation:handler:)``
  /// already include it). Per mailbox instance.
  public func nextRecheckDate() -> Date? {
    inspector.spool.secondsToNextRecheck().map { Date().addingTimeInterval($0) }
  }
}
