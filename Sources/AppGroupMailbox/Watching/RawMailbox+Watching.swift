public import Foundation

extension AppGroupRawMailbox {
  /// Starts watching this mailbox: a wake-up after each message that becomes pending in any
  /// process; see ``AppGroupMailbox/wakeUps(pollingInterval:)`` (the same watcher).
  /// - Parameter pollingInterval: Seconds between checks of `pending/` when inotify cannot be
  ///   used; greater than 0. Default 1.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  /// - Complexity: one listing of `pending/` to start (O(n) in its entries).
  public func wakeUps(pollingInterval: TimeInterval = 1) throws -> AppGroupMailboxWatcher {
    try watcher(pollingInterval: pollingInterval)
  }

  /// Blocks until a message may be pending or `timeout` seconds pass (nil: no limit); also
  /// ends, true, when a delayed message becomes due (it is made pending). See
  /// ``AppGroupMailbox/wait(timeout:)``. Do not call it from a Swift concurrency task.
  /// - Returns: whether anything may be pending (false on timeout).
  /// - Throws: ``AppGroupMailboxError/mailboxDirectoryRemoved``;
  ///   ``AppGroupMailboxError/invalidLimit(_:)`` naming `timeout` when it is NaN.
  public func wait(timeout: TimeInterval?) throws -> Bool {
    try waitForWork(timeout: timeout)
  }

  /// Claims messages in batches and hands each to `handler` until the mailbox is empty, then
  /// waits for the next wake-up (or due time, or lease deadline), until the task is cancelled;
  /// see ``AppGroupMailbox/drain(batchSize:pollingInterval:handler:)`` for every rule.
  /// - Throws: what `handler` throws; ``AppGroupMailboxError/invalidLimit(_:)``;
  ///   ``AppGroupMailboxError/ioFailure(_:)``; ``AppGroupMailboxError/mailboxDirectoryRemoved``.
  public func drain(
    batchSize: Int = 16, pollingInterval: TimeInterval = 1,
    handler: (Claim) async throws -> Void
  ) async throws {
    try await drainClaims(batchSize: batchSize, pollingInterval: pollingInterval, handler: handler)
  }

  /// When this mailbox's claims must look again at an entry they skipped for now (a hard link
  /// younger than its grace period, an entry a quarantine could not move), or nil when none
  /// waits. A loop that waits for wake-ups must not sleep past it: no file event announces
  /// that the grace period ended (``wait(timeout:)`` and ``drain(batchSize:pollingInterval:handler:)``
  /// already include it). Per mailbox instance.
  public func nextRecheckDate() -> Date? {
    spool.secondsToNextRecheck().map { Date().addingTimeInterval($0) }
  }
}
