public import Foundation

extension AppGroupMailbox {
  /// Wake-ups; see ``AppGroupMailboxWatcher``.
  public typealias Watcher = AppGroupMailboxWatcher
}

// Waiting for work, the same for both mailbox types: each member runs on the mailbox's spool
// (Spool+Waiting.swift) with the mailbox's own claimPending(limit:).
extension AppGroupMailboxProtocol {
  /// Starts watching this mailbox: a wake-up after each message that becomes pending in any
  /// process (an enqueue, a release, a recovered claim, a valid message file moved or linked
  /// into `pending/` from outside), and after each message that arrives in `delayed/` (a
  /// delayed enqueue or a release with a retry delay: nothing is pending yet, but a consumer
  /// sleeping until the earliest due time learns of a new one). Temporary files, idempotent
  /// enqueues that wrote nothing, claims and acknowledges wake nobody.
  ///
  /// The watch is added before the first scan; the first wake-up comes at once when messages
  /// are already pending. When the namespace directory is deleted, moved or replaced, waiting
  /// ends with ``AppGroupMailboxError/mailboxDirectoryRemoved``: open the mailbox again.
  /// - Parameter pollingInterval: Seconds between checks of `pending/` when inotify cannot be
  ///   used; greater than 0. Default 1.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  /// - Complexity: one listing of `pending/` to start (O(n) in its entries).
  public func wakeUps(pollingInterval: TimeInterval = 1) throws -> AppGroupMailboxWatcher {
    try inspector.spool.watcher(pollingInterval: pollingInterval)
  }

  /// Blocks until a message may be pending or `timeout` seconds pass (nil: no limit).
  ///
  /// Returns at once with true when a message is already pending. A delayed message (see
  /// ``AppGroupMailbox/enqueue(_:notBefore:priority:)``) wakes the caller by itself when it
  /// becomes due: the wait ends then, the message is made pending, and the result is true. Opens
  /// a watcher for the call and closes it before returning; a loop waiting again and again should
  /// keep one ``wakeUps(pollingInterval:)`` watcher instead. Do not call it from a Swift
  /// concurrency task.
  /// - Returns: whether anything may be pending (false on timeout). A timeout of 0 or less
  ///   looks once; infinity waits without limit, as nil does.
  /// - Throws: ``AppGroupMailboxError/mailboxDirectoryRemoved``;
  ///   ``AppGroupMailboxError/invalidLimit(_:)`` naming `timeout` when it is NaN.
  @available(*, noasync, message: "it blocks its thread; use wakeUps() or drain in async code")
  public func wait(timeout: TimeInterval?) throws -> Bool {
    try inspector.spool.waitForWork(timeout: timeout)
  }

  /// Claims messages in batches and hands each to `handler` until the mailbox is empty, then
  /// waits for the next wake-up, until the task is cancelled.
  ///
  /// When `handler` returns, the claim is acknowledged (a claim the handler already
  /// acknowledged or released, or that was recovered meanwhile, is left alone). When `handler`
  /// throws, that claim and the rest of the batch are released and the error is rethrown. On
  /// cancellation the claim in the handler finishes as usual, the claims of the batch not yet
  /// handed out are released (back at their positions), and `drain` returns: no claim is lost
  /// or held twice. A claim never handed out goes back without counting a delivery
  /// (``AppGroupMailboxClaimBase/releaseUndelivered()``). A handler that, after the
  /// cancellation, throws `CancellationError` (it stopped for the cancellation, as `Task.sleep`
  /// does) has its claim released with the delivery counted (a message no handler finishes in
  /// the time it gets still becomes a dead letter), and `drain` returns instead of rethrowing. While idle it also wakes when the earliest lease in `claimed/` runs out, to
  /// recover that abandoned claim, and when the earliest delayed message becomes due (no busy
  /// polling in between).
  /// - Parameters:
  ///   - batchSize: Messages claimed at once, at least 1 (their leases run while earlier ones
  ///     are handled: a claim past half its lease is renewed before it is handed out, and one
  ///     whose lease ran out and that another consumer recovered meanwhile is skipped, never
  ///     handed out). Default 16.
  ///   - pollingInterval: As in ``wakeUps(pollingInterval:)``.
  ///   - isolation: The actor drain runs on, the caller's by default, so a handler may touch
  ///     state of the caller's actor (the main actor's, for example) without being `Sendable`.
  ///   - handler: Called for each claim, one at a time, in order.
  /// - Throws: what `handler` throws; ``AppGroupMailboxError/invalidLimit(_:)``;
  ///   ``AppGroupMailboxError/ioFailure(_:)``; ``AppGroupMailboxError/mailboxDirectoryRemoved``.
  public func drain(
    batchSize: Int = 16, pollingInterval: TimeInterval = 1,
    isolation: isolated (any Actor)? = #isolation,
    handler: (Claim) async throws -> Void
  ) async throws {
    try await inspector.spool.drain(
      batchSize: batchSize, pollingInterval: pollingInterval,
      claim: { try claimPending(limit: $0) }, handler: handler)
  }

  /// Claims what is pending in batches and hands each claim to `handler`, as
  /// ``drain(batchSize:pollingInterval:isolation:handler:)`` does, but returns as soon as a claim finds
  /// nothing pending instead of waiting: for a job that empties the mailbox and ends.
  ///
  /// When `handler` returns, the claim is acknowledged (unless the handler already finished
  /// it); when it throws, that claim and the rest of its batch are released and the error is
  /// rethrown; on cancellation the claims not yet handed out are released and it returns. A
  /// claim never handed out goes back without counting a delivery; the claim of a handler that
  /// throws `CancellationError` after the cancellation goes back counted, and it returns.
  /// Delayed messages that are not due yet stay.
  /// - Parameters:
  ///   - batchSize: Messages claimed at once, at least 1. Default 16.
  ///   - isolation: As in ``drain(batchSize:pollingInterval:isolation:handler:)``.
  ///   - handler: Called for each claim, one at a time, in order.
  /// - Throws: what `handler` throws; ``AppGroupMailboxError/invalidLimit(_:)`` (`"batchSize"`);
  ///   ``AppGroupMailboxError/ioFailure(_:)``; ``AppGroupMailboxError/mailboxDirectoryRemoved``.
  public func drainPending(
    batchSize: Int = 16, isolation: isolated (any Actor)? = #isolation,
    handler: (Claim) async throws -> Void
  ) async throws {
    try await inspector.spool.drainPending(
      batchSize: batchSize, claim: { try claimPending(limit: $0) }, handler: handler)
  }
}
