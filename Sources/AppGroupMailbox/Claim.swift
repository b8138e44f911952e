extension AppGroupMailbox {
  /// A message this process holds exclusively until it acknowledges or releases it, or until
  /// its lease (``Limits/claimTimeout``) runs out.
  ///
  /// ``AppGroupMailboxClaimBase/id``, ``AppGroupMailboxClaimBase/enqueuedAt``,
  /// ``AppGroupMailboxClaimBase/deliveryCount`` and the methods
  /// (``AppGroupMailboxClaimBase/acknowledge()``, ``AppGroupMailboxClaimBase/release()``,
  /// ``AppGroupMailboxClaimBase/release(retryAfter:)``, ``AppGroupMailboxClaimBase/renew()``)
  /// are those every claim has.
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
  ///
  /// `@unchecked Sendable` as its superclass must be restated; its own stored properties
  /// (`message`) are `let`s of `Sendable` types.
  public final class Claim: AppGroupMailboxClaimBase, @unchecked Sendable {
    /// The decoded message.
    public let message: Message

    init(raw: RawClaim, message: Message, mailbox: AppGroupMailbox) {
      self.message = message
      super.init(raw: raw, owner: mailbox)
    }
  }
}
