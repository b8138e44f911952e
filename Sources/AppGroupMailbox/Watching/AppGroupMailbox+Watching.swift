public import Foundation

extension AppGroupMailbox {
  /// Wake-ups; see ``AppGroupMailboxWatcher``.
  public typealias Watcher = AppGroupMailboxWatcher

  /// Starts watching this mailbox: a wake-up after each message that becomes pending in any
  /// process (an enqueue, a release, a recovered claim, a valid message file moved or linked
  /// into `pending/` from outside), and after each message that arrives in `delayed/` (a
  /// delayed enqueue or a release with a retry delay: nothing is pending yet, but a consumer
  /// sleeping until the earliest due time learns of a new one). Temporary files, idempotent
  /// enqueues that wrote nothing, claims and acknowledges wake nobody.
  ///
  /// The watch is added before the first scan; the first wake-up comes at once when messages
  /// are already pending. When the namespace directory is deleted, moved or replaced, waiting
  /// ends with ``MailboxError/mailboxDirectoryRemoved``: open the mailbox again.
  /// - Parameter pollingInterval: Seconds between checks of `pending/` when inotify cannot be
  ///   used; greater than 0. Default 1.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  /// - Complexity: one listing of `pending/` to start (O(n) in its entries).
  public func wakeUps(pollingInterval: TimeInterval = 1) throws -> Watcher {
    try watcher(pollingInterval: pollingInterval)
  }

  /// Blocks until a message may be pending or `timeout` seconds pass (nil: no limit).
  ///
  /// Returns at once with true when a message is already pending. A delayed message (see
  /// ``enqueue(_:notBefore:priority:)``) wakes the caller by itself when it becomes due: the wait ends
  /// then, the message is made pending, and the result is true. Opens a watcher for the call
  /// and closes it before returning; a loop waiting again and again should keep one
  /// ``wakeUps(pollingInterval:)`` watcher instead. Do not call it from a Swift concurrency
  /// task.
  /// - Returns: whether anything may be pending (false on timeout). A timeout of 0 or less
  ///   looks once; infinity waits without limit, as nil does.
  /// - Throws: ``MailboxError/mailboxDirectoryRemoved``; ``MailboxError/invalidLimit(_:)``
  ///   naming `timeout` when it is NaN.
  public func wait(timeout: TimeInterval?) throws -> Bool {
    try waitForWork(timeout: timeout)
  }

  /// Claims messages in batches and hands each to `handler` until the mailbox is empty, then
  /// waits for the next wake-up, until the task is cancelled.
  ///
  /// When `handler` returns, the claim is acknowledged (a claim the handler already
  /// acknowledged or released, or that was recovered meanwhile, is left alone). When `handler`
  /// throws, that claim and the rest of the batch are released and the error is rethrown. On
  /// cancellation the claim in the handler finishes as usual, the claims of the batch not yet
  /// handed out are released (back at their positions), and `drain` returns: no claim is lost
  /// or held twice. While idle it also wakes when the earliest lease in `claimed/` runs out, to
  /// recover that abandoned claim, and when the earliest delayed message becomes due (no busy
  /// polling in between).
  /// - Parameters:
  ///   - batchSize: Messages claimed at once, at least 1 (their leases run while earlier ones
  ///     are handled). Default 16.
  ///   - pollingInterval: As in ``wakeUps(pollingInterval:)``.
  ///   - handler: Called for each claim, one at a time, in order.
  /// - Throws: what `handler` throws; ``MailboxError/invalidLimit(_:)``;
  ///   ``MailboxError/ioFailure(_:)``; ``MailboxError/mailboxDirectoryRemoved``.
  public func drain(
    batchSize: Int = 16, pollingInterval: TimeInterval = 1,
    handler: (Claim) async throws -> Void
  ) async throws {
    try await drainClaims(batchSize: batchSize, pollingInterval: pollingInterval, handler: handler)
  }
}
