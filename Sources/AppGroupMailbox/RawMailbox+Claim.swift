public import Foundation

extension AppGroupRawMailbox {
  /// A raw message this process holds exclusively until it acknowledges or releases it, or until
  /// its lease (``AppGroupMailboxLimits/claimTimeout``) runs out; the untyped counterpart of
  /// ``AppGroupMailbox/Claim``, with the same semantics.
  ///
  /// Thread safety: the methods may be called from any thread; they are serialised per claim.
  ///
  /// Lifetime: as ``AppGroupMailbox/Claim``, a claim does not keep its mailbox alive. Once the
  /// mailbox that made it (by ``AppGroupRawMailbox/claimPending(limit:)`` or
  /// ``AppGroupRawMailbox/claim(token:)``) is deallocated, every method throws
  /// ``AppGroupMailboxError/mailboxDeallocated`` and changes nothing: the message stays claimed
  /// until its lease runs out, then it is recovered for another consumer (or finished from any
  /// process through its ``token``). Keep the mailbox while you hold its claims.
  public final class Claim: Sendable {
    /// The message id: stable across redeliveries.
    public let id: UUID
    /// The encoded message, byte for byte as enqueued (one JSON value).
    public let payload: Data
    /// When the message was enqueued (microsecond precision).
    public let enqueuedAt: Date
    /// 1 on the first delivery, one more each time it is claimed again.
    public let deliveryCount: Int
    /// The producer's type tag; empty for an untyped message.
    public let messageType: String
    /// The token that names this claim to any process (see ``AppGroupRawMailbox/ClaimToken``
    /// and ``AppGroupRawMailbox/claim(token:)``); a renewal keeps it.
    public let token: ClaimToken

    private let core: ClaimCore

    init(raw: RawClaim, mailbox: AppGroupRawMailbox) {
      self.id = raw.name.message.id
      self.payload = raw.payload
      self.enqueuedAt = Date(mailboxMicros: raw.header.enqueuedAt)
      self.deliveryCount = raw.name.message.attempts
      self.messageType = raw.header.messageType
      self.token = ClaimToken(id: raw.name.message.id, nonce: raw.name.token)
      self.core = ClaimCore(name: raw.name, owner: mailbox)
    }

    /// When the lease runs out (microsecond precision): after it, any process's maintenance may
    /// recover the message for another consumer. Moved on by ``renew()``; nil once this handle
    /// finished the claim or learned that it no longer exists.
    public var leaseDeadline: Date? { core.leaseDeadline }

    /// Deletes the message: it has been handled.
    /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when already finished or
    ///   recovered; ``AppGroupMailboxError/mailboxDeallocated``;
    ///   ``AppGroupMailboxError/ioFailure(_:)``.
    public func acknowledge() throws {
      try core.acknowledge()
    }

    /// Returns the message to pending at its original position; its lifetime is not extended.
    /// - Throws: as ``acknowledge()``.
    public func release() throws {
      try core.release()
    }

    /// Returns the message to the mailbox, not claimable for `retryAfter` seconds, as
    /// ``AppGroupMailbox/Claim/release(retryAfter:)`` does: it waits in `delayed/` (still
    /// counting toward ``AppGroupMailboxLimits/maxMessages``), then goes back to its original
    /// position. A `retryAfter` of 0 or less is a plain ``release()``. Use
    /// ``AppGroupMailboxRetryPolicy`` to choose a delay that grows with ``deliveryCount``. A
    /// delay reaching past the last representable instant (up to infinity) is clamped to it.
    /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `retryAfter` when it is NaN
    ///   (the claim is kept); otherwise as ``acknowledge()``.
    public func release(retryAfter: TimeInterval) throws {
      try core.release(retryAfter: retryAfter)
    }

    /// Gives up on the message: moves it into `quarantine/` as a dead letter (as a claim does
    /// with a message past ``AppGroupMailboxLimits/maxDeliveryAttempts``), where
    /// `mailboxctl quarantine` can list, requeue or purge it. Reports
    /// ``AppGroupMailboxDiagnostic/deadLetterQuarantined``.
    /// - Throws: as ``acknowledge()``.
    public func deadLetter() throws {
      try core.deadLetter()
    }

    /// Starts a fresh lease of ``AppGroupMailboxLimits/claimTimeout`` seconds from now.
    /// - Throws: as ``acknowledge()``.
    public func renew() throws {
      try core.renew()
    }
  }
}
