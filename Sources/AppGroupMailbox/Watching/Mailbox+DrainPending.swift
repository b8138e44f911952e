extension AppGroupMailbox {
  /// Claims what is pending in batches and hands each claim to `handler`, as
  /// ``drain(batchSize:pollingInterval:handler:)`` does, but returns as soon as a claim finds
  /// nothing pending instead of waiting: for a job that empties the mailbox and ends.
  ///
  /// When `handler` returns, the claim is acknowledged (unless the handler already finished
  /// it); when it throws, that claim and the rest of its batch are released and the error is
  /// rethrown; on cancellation the claims not yet handed out are released and it returns.
  /// Delayed messages that are not due yet stay.
  /// - Parameter batchSize: Messages claimed at once, at least 1. Default 16.
  /// - Throws: what `handler` throws; ``MailboxError/invalidLimit(_:)`` (`"batchSize"`);
  ///   ``MailboxError/ioFailure(_:)``.
  public func drainPending(batchSize: Int = 16, handler: (Claim) async throws -> Void)
    async throws
  {
    try await drainPendingClaims(batchSize: batchSize, handler: handler)
  }
}

extension AppGroupRawMailbox {
  /// Claims what is pending and hands each claim to `handler` until nothing is pending, then
  /// returns; see ``AppGroupMailbox/drainPending(batchSize:handler:)``.
  public func drainPending(batchSize: Int = 16, handler: (Claim) async throws -> Void)
    async throws
  {
    try await drainPendingClaims(batchSize: batchSize, handler: handler)
  }
}
