public import Foundation

extension AppGroupMailbox {
  /// Wake-ups; see ``AppGroupMailboxWatcher``.
  public typealias Watcher = AppGroupMailboxWatcher

  /// Starts watching this mailbox: a wake-up after each message that becomes pending in any
  /// process (an enqueue, a release, a recovered claim, a valid message file moved or linked
  /// into `pending/` from outside). Temporary files, idempotent enqueues that wrote nothing,
  /// claims and acknowledges wake nobody.
  ///
  /// The watch is added before the first scan; the first wake-up comes at once when messages
  /// are already pending. When the namespace directory is deleted, moved or replaced, waiting
  /// ends with ``MailboxError/mailboxDirectoryRemoved``: open the mailbox again.
  /// - Parameter pollingInterval: Seconds between checks of `pending/` when inotify cannot be
  ///   used; greater than 0. Default 1.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  /// - Complexity: one listing of `pending/` to start (O(n) in its entries).
  public func wakeUps(pollingInterval: TimeInterval = 1) throws -> Watcher {
    try Watcher.validate(pollingInterval: pollingInterval)
    return Watcher(
      target: PendingAreaTarget(directories: spool.directories),
      pollingInterval: pollingInterval, diagnostic: spool.configuration.diagnostic)
  }

  /// Blocks until a message may be pending or `timeout` seconds pass (nil: no limit).
  ///
  /// Returns at once with true when a message is already pending. A delayed message (see
  /// ``enqueue(_:notBefore:)``) wakes the caller by itself when it becomes due: the wait ends
  /// then, the message is made pending, and the result is true. Opens a watcher for the call
  /// and closes it before returning; a loop waiting again and again should keep one
  /// ``wakeUps(pollingInterval:)`` watcher instead. Do not call it from a Swift concurrency
  /// task.
  /// - Returns: whether anything may be pending (false on timeout).
  /// - Throws: ``MailboxError/mailboxDirectoryRemoved``.
  public func wait(timeout: TimeInterval?) throws -> Bool {
    let watcher = try wakeUps()
    defer { watcher.close() }
    let due = secondsToNextDue()
    guard let due, due < timeout ?? .infinity else { return try watcher.wait(timeout: timeout) }
    if try watcher.wait(timeout: due) { return true }
    var diagnostics: [Diagnostic] = []
    defer { spool.emit(diagnostics) }
    return try spool.promoteDue(diagnostics: &diagnostics) > 0 || watcher.wait(timeout: 0)
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
    guard batchSize >= 1 else { throw MailboxError.invalidLimit("batchSize") }
    let watcher = try wakeUps(pollingInterval: pollingInterval)
    defer { watcher.close() }
    while !Task.isCancelled {
      while !Task.isCancelled {
        let claims = try claimPending(limit: batchSize)
        if claims.isEmpty { break }
        try await handOut(claims, to: handler)
      }
      if Task.isCancelled { return }
      let lease = secondsToNextLeaseExpiry()
      let due = secondsToNextDue()
      let timeout = [lease, due].compactMap { $0 }.min()
      let outcome = await watcher.core.wait(timeout: timeout)
      if outcome == .timedOut {
        var diagnostics: [Diagnostic] = []
        defer { spool.emit(diagnostics) }
        try spool.recoverClaims(diagnostics: &diagnostics)
        try spool.promoteDue(diagnostics: &diagnostics)
      }
      guard try Watcher.interpret(outcome) || outcome == .timedOut else { return }
    }
  }

  /// Hands `claims` to `handler` in order; see ``drain(batchSize:pollingInterval:handler:)``.
  private func handOut(_ claims: [Claim], to handler: (Claim) async throws -> Void)
    async throws
  {
    for (index, claim) in claims.enumerated() {
      if Task.isCancelled {
        releaseQuietly(claims[index...])
        return
      }
      do {
        try await handler(claim)
      } catch {
        releaseQuietly(claims[index...])
        throw error
      }
      do {
        try claim.acknowledge()
      } catch MailboxError.claimNoLongerExists {
        // The handler finished it, or its lease ran out and another consumer has it.
      } catch {
        releaseQuietly(claims[(index + 1)...])
        throw error
      }
    }
  }

  private func releaseQuietly(_ claims: ArraySlice<Claim>) {
    for claim in claims { try? claim.release() }
  }

  /// Seconds until the earliest delayed message is due (at least 0.001), nil when none waits.
  private func secondsToNextDue() -> TimeInterval? {
    guard let due = try? spool.nextDueMicros() else { return nil }
    return max(Double(due - spool.now) / 1_000_000 + 0.000_5, 0.001)
  }

  /// Seconds until the earliest lease in `claimed/` runs out (at least 0.01; 1 when it already
  /// ran out but is still there), nil when nothing is claimed.
  private func secondsToNextLeaseExpiry() -> TimeInterval? {
    guard let entries = try? Syscall.list(spool.directories.claimed) else { return nil }
    var earliest: Int64?
    for entry in entries {
      guard let name = ClaimedName(parsing: entry.name) else { continue }
      earliest = min(earliest ?? .max, name.leaseUntilMicros)
    }
    guard let earliest else { return nil }
    let remaining = Double(earliest - spool.now) / 1_000_000
    return remaining <= 0 ? 1 : max(remaining + 0.001, 0.01)
  }
}
