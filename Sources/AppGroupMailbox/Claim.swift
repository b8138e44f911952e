public import Foundation

extension AppGroupMailbox {
  /// A message this process holds exclusively until it acknowledges or releases it, or until
  /// its lease (``Limits/claimTimeout``) runs out.
  ///
  /// Thread safety: the methods may be called from any thread; they are serialised per claim.
  /// After a recovery gave the message to another consumer, every method of the old claim throws
  /// ``MailboxError/claimNoLongerExists`` and changes nothing of the new holder's.
  ///
  /// Lifetime: a claim does not keep its mailbox alive (the rule of ``AppGroupRawMailbox/Claim``
  /// too). Once the mailbox that made it is deallocated, every method throws
  /// ``MailboxError/mailboxDeallocated`` and changes nothing: the message stays claimed until its
  /// lease runs out, then it is recovered for another consumer. Keep the mailbox while you hold
  /// its claims.
  public final class Claim: Sendable {
    /// The message id: stable across redeliveries, so handlers can deduplicate effects.
    public let id: UUID
    /// The decoded message.
    public let message: Message
    /// When the message was enqueued (microsecond precision).
    public let enqueuedAt: Date
    /// 1 on the first delivery, one more each time it is claimed again after a release or a
    /// recovery.
    public let deliveryCount: Int

    private let core: ClaimCore

    init(raw: RawClaim, message: Message, mailbox: AppGroupMailbox) {
      self.id = raw.name.message.id
      self.message = message
      self.enqueuedAt = Date(mailboxMicros: raw.header.enqueuedAt)
      self.deliveryCount = raw.name.message.attempts
      self.core = ClaimCore(name: raw.name, owner: mailbox)
    }

    /// Deletes the message: it has been handled.
    /// - Throws: ``MailboxError/claimNoLongerExists`` when already finished or recovered;
    ///   ``MailboxError/mailboxDeallocated``; ``MailboxError/ioFailure(_:)``.
    public func acknowledge() throws {
      try core.acknowledge()
    }

    /// Returns the message to pending at its original position; its lifetime is not extended.
    /// - Throws: as ``acknowledge()``.
    public func release() throws {
      try core.release()
    }

    /// Returns the message to the mailbox, not claimable for `retryAfter` seconds (it waits in
    /// `delayed/`, still counting toward ``Limits/maxMessages``); when due it goes back to its
    /// original position. A `retryAfter` of 0 or less is a plain ``release()``. Use
    /// ``RetryPolicy`` to choose a delay that grows with ``deliveryCount``. A delay reaching past
    /// the last representable instant (2286, up to infinity) is clamped to it: the message then
    /// expires by its lifetime. A Linux addition.
    /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `retryAfter` when it is NaN (the claim
    ///   is kept); otherwise as ``acknowledge()``.
    public func release(retryAfter: TimeInterval) throws {
      try core.release(retryAfter: retryAfter)
    }

    /// Starts a fresh lease of ``Limits/claimTimeout`` seconds from now.
    /// - Throws: as ``acknowledge()``.
    public func renew() throws {
      try core.renew()
    }
  }
}
