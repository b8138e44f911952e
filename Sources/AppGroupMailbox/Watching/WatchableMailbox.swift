import Foundation

/// What the typed and the untyped mailbox share for watching and draining: their spool and
/// their own claim. The public faces (`wakeUps`, `wait`, `drain`, `drainPending` of
/// ``AppGroupMailbox`` and ``AppGroupRawMailbox``) call the one implementation below, which
/// runs on the spool (``Spool/watcher(pollingInterval:)``, ``Spool/waitForWork(timeout:)``,
/// ``Spool/drain(batchSize:pollingInterval:claim:handler:)``,
/// ``Spool/drainPending(batchSize:claim:handler:)`` in `Spool+Waiting.swift`).
protocol WatchableMailbox: ClaimOwner {
  associatedtype Claim: DrainableClaim
  /// Claims up to `limit` pending messages (all when nil), oldest first.
  func claimPending(limit: Int?) throws -> [Claim]
}

extension AppGroupMailbox: WatchableMailbox {}
extension AppGroupRawMailbox: WatchableMailbox {}

extension WatchableMailbox {
  /// See ``AppGroupMailbox/wakeUps(pollingInterval:)``.
  func watcher(pollingInterval: TimeInterval) throws -> AppGroupMailboxWatcher {
    try spool.watcher(pollingInterval: pollingInterval)
  }

  /// See ``AppGroupMailbox/wait(timeout:)``.
  func waitForWork(timeout: TimeInterval?) throws -> Bool {
    try spool.waitForWork(timeout: timeout)
  }

  /// See ``AppGroupMailbox/drain(batchSize:pollingInterval:handler:)``: this mailbox's claims,
  /// handed out by the spool's drain loop.
  func drainClaims(
    batchSize: Int, pollingInterval: TimeInterval, handler: (Claim) async throws -> Void
  ) async throws {
    try await spool.drain(
      batchSize: batchSize, pollingInterval: pollingInterval,
      claim: { try claimPending(limit: $0) }, handler: handler)
  }

  /// See ``AppGroupMailbox/drainPending(batchSize:handler:)``.
  func drainPendingClaims(batchSize: Int, handler: (Claim) async throws -> Void) async throws {
    try await spool.drainPending(
      batchSize: batchSize, claim: { try claimPending(limit: $0) }, handler: handler)
  }
}
