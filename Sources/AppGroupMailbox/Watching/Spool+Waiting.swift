import Foundation
import MailboxLocks

/// Waiting for work, shared by the typed and the untyped mailbox: the watcher on `pending/`,
/// the wait that also ends when a delayed message becomes due, and the drain loop.
extension Spool {
  /// A watcher on this namespace's `pending/` area; see
  /// ``AppGroupMailbox/wakeUps(pollingInterval:)``.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  func watcher(pollingInterval: TimeInterval) throws -> AppGroupMailboxWatcher {
    try AppGroupMailboxWatcher.validate(pollingInterval: pollingInterval)
    return AppGroupMailboxWatcher(
      target: PendingAreaTarget(directories: directories),
      pollingInterval: pollingInterval, diagnostic: configuration.diagnostic)
  }

  /// See ``AppGroupMailbox/wait(timeout:)``: true once a message is pending (after a wake-up,
  /// or at the earliest due time, when due messages are made pending), or when an entry a claim
  /// skipped for now is due for another look (``secondsToNextRecheck()``); false at `timeout`.
  /// A wake-up that finds nothing pending (a delayed arrival, a coalesced hint) waits on.
  func waitForWork(timeout: TimeInterval?) throws -> Bool {
    let timeout = try TimeValue.timeout(timeout)
    let watcher = try watcher(pollingInterval: 1)
    defer { watcher.close() }
    let deadline = timeout.map { Date().addingTimeInterval(max(0, $0)) }
    while true {
      let remaining = deadline.map { max(0, $0.timeIntervalSinceNow) }
      let due = secondsToNextDue()
      let recheck = secondsToNextRecheck()
      let slice = [remaining, due, recheck].compactMap { $0 }.min()
      let woken = try watcher.wait(timeout: slice)
      var diagnostics: [AppGroupMailboxDiagnostic] = []
      let promoted = try promoteDue(diagnostics: &diagnostics)
      emit(diagnostics)
      if !isHeld, promoted > 0 || (woken && hasPendingMessage()) { return true }
      // A skipped entry is due for another look: the caller's next claim handles it.
      if recheck != nil, nextRecheck.withLock({ $0 }) <= now { return true }
      if let deadline, Date() >= deadline { return false }
    }
  }

  /// Whether `pending/` holds at least one entry under a message name that the last claims did
  /// not skip for now (one listing, up to the first such name): a skipped entry counts at its
  /// recheck time instead. A message skipped as another consumer's type counts again when
  /// another file took its name (a keyed replacement): the index's marks that a name with their
  /// id arrived for since (``PendingIndex/passedOverToLookAt(pending:)``) are looked at
  /// (``stillPassedOver(_:_:)``).
  private func hasPendingMessage() -> Bool {
    let skipped = skippedNames.withLock { $0 }
    let unconfirmed = pendingIndex.passedOverToLookAt(pending: directories.pending)
    // Stops at the first such name: `pending/` at depth is neither read whole nor held.
    let found = try? Syscall.containsEntry(directories.pending) { bytes, _ in
      guard let name = PendingName(bytes: bytes) else { return false }
      // A pending name is ASCII: its string is its exact bytes.
      guard !skipped.isEmpty, skipped.contains(String(decoding: bytes, as: UTF8.self)) else {
        return true
      }
      guard let mark = unconfirmed[name.id] else { return false }
      return !stillPassedOver(name, mark)
    }
    return found ?? false
  }

  /// See ``AppGroupMailbox/drain(batchSize:pollingInterval:isolation:handler:)``; `claim` claims up to
  /// the given number of messages.
  func drain<C: AppGroupMailboxClaimBase>(
    batchSize: Int, pollingInterval: TimeInterval, isolation: isolated (any Actor)? = #isolation,
    claim: (Int) throws -> [C], handler: (C) async throws -> Void
  ) async throws {
    guard batchSize >= 1 else { throw AppGroupMailboxError.invalidLimit("batchSize") }
    let watcher = try watcher(pollingInterval: pollingInterval)
    defer { watcher.close() }
    while !Task.isCancelled {
      while !Task.isCancelled {
        let claims = try claim(batchSize)  // claimPending reports a removed namespace
        if claims.isEmpty { break }
        try await handOut(claims, to: handler)
      }
      if Task.isCancelled { return }
      let timeout = [secondsToNextLeaseExpiry(), secondsToNextDue(), secondsToNextRecheck()]
        .compactMap { $0 }.min()
      let outcome = await watcher.core.wait(timeout: timeout)
      if outcome == .timedOut {
        var diagnostics: [AppGroupMailboxDiagnostic] = []
        defer { emit(diagnostics) }
        try removalReported {
          try recoverClaims(diagnostics: &diagnostics)
          try promoteDue(diagnostics: &diagnostics)
        }
      }
      guard try AppGroupMailboxWatcher.interpret(outcome) || outcome == .timedOut else { return }
    }
  }

  /// Claims and hands out messages until nothing is pending, then returns; see
  /// ``AppGroupMailbox/drainPending(batchSize:isolation:handler:)``.
  func drainPending<C: AppGroupMailboxClaimBase>(
    batchSize: Int, isolation: isolated (any Actor)? = #isolation, claim: (Int) throws -> [C],
    handler: (C) async throws -> Void
  ) async throws {
    guard batchSize >= 1 else { throw AppGroupMailboxError.invalidLimit("batchSize") }
    while !Task.isCancelled {
      let claims = try claim(batchSize)
      if claims.isEmpty { return }
      try await handOut(claims, to: handler)
    }
  }

  /// Hands `claims` to `handler` in order, acknowledging each after it returns; see
  /// ``AppGroupMailbox/drain(batchSize:pollingInterval:isolation:handler:)``.
  private func handOut<C: AppGroupMailboxClaimBase>(
    _ claims: [C], isolation: isolated (any Actor)? = #isolation,
    to handler: (C) async throws -> Void
  ) async throws {
    for (index, claim) in claims.enumerated() {
      if Task.isCancelled {
        releaseQuietly(claims[index...])
        return
      }
      do {
        // Another consumer has it now, or it outlived its lifetime while it waited.
        guard try isStillHeld(claim), try !expiredWhileWaiting(claim) else { continue }
      } catch {
        releaseQuietly(claims[index...])
        throw error
      }
      do {
        try await handler(claim)
      } catch is CancellationError where Task.isCancelled {
        // The handler stopped for the cancellation (a Task.sleep, a checkCancellation): drain
        // returns as on any cancellation. The handler had the message, so the delivery counts:
        // one no handler finishes in the time it is given still becomes a dead letter
        // (maxDeliveryAttempts) instead of holding the head of the line for ever.
        try? claim.release()
        releaseQuietly(claims[(index + 1)...])
        return
      } catch {
        try? claim.release()  // the handler had it: the delivery counts
        releaseQuietly(claims[(index + 1)...])
        throw error
      }
      do {
        try claim.acknowledge()
      } catch AppGroupMailboxError.claimNoLongerExists {
        // The handler finished it, or its lease ran out and another consumer has it.
      } catch {
        releaseQuietly(claims[(index + 1)...])
        throw error
      }
    }
  }

  /// Whether `claim`, waiting in a batch while earlier handlers ran, is still this drain's to
  /// hand out. Past half its lease it is renewed first, so a handler never gets a claim whose
  /// lease ran out; one recovered meanwhile (another consumer may have handled it already) is
  /// skipped. A claim with most of its lease left costs nothing here.
  /// - Throws: what ``AppGroupMailboxClaimBase/renew()`` throws, except `claimNoLongerExists`.
  private func isStillHeld(_ claim: some AppGroupMailboxClaimBase) throws -> Bool {
    guard let deadline = claim.core.leaseUntilMicros else { return false }
    let halfLease = limits.claimTimeout.microseconds / 2
    guard deadline.microsSince(now) <= halfLease else { return true }
    do {
      try claim.renew()
      return true
    } catch AppGroupMailboxError.claimNoLongerExists {
      return false
    }
  }

  /// Whether `claim` reached its message's lifetime while it waited in the batch (handlers
  /// before it took long): a consumer never hands out a message that old (docs/FORMAT.md), so it
  /// is deleted as the claim would have (``AppGroupMailboxDiagnostic/expiredMessageRemoved``).
  /// - Throws: what ``AppGroupMailboxClaimBase/acknowledge()`` throws, except
  ///   `claimNoLongerExists`.
  private func expiredWhileWaiting(_ claim: some AppGroupMailboxClaimBase) throws -> Bool {
    let age = now.microsSince(claim.core.enqueuedAtMicros)
    guard age >= limits.messageLifetime.microseconds else { return false }
    do {
      try claim.acknowledge()
      emit([.expiredMessageRemoved])
    } catch AppGroupMailboxError.claimNoLongerExists {
      // Recovered by another consumer meanwhile: its claim decides.
    }
    return true
  }

  /// Puts back claims no handler had, without counting their delivery.
  private func releaseQuietly<C: AppGroupMailboxClaimBase>(_ claims: ArraySlice<C>) {
    for claim in claims { try? claim.releaseUndelivered() }
  }

  /// Seconds until the earliest delayed message is due (at least 0.001), nil when none waits.
  func secondsToNextDue() -> TimeInterval? {
    guard let due = try? nextDueMicros() else { return nil }
    return max(Double(due - now) / 1_000_000 + 0.000_5, 0.001)
  }

  /// Seconds until the earliest lease in `claimed/` runs out (at least 0.01; 1 when it already
  /// ran out but is still there), nil when nothing is claimed.
  func secondsToNextLeaseExpiry() -> TimeInterval? {
    guard let entries = try? Syscall.list(directories.claimed) else { return nil }
    var earliest: Int64?
    for entry in entries {
      guard let name = ClaimedName(parsing: entry.name) else { continue }
      earliest = min(earliest ?? .max, name.leaseUntilMicros)
    }
    guard let earliest else { return nil }
    let remaining = Double(earliest - now) / 1_000_000
    return remaining <= 0 ? 1 : max(remaining + 0.001, 0.01)
  }
}
