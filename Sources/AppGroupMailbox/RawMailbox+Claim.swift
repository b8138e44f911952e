public import Foundation

extension AppGroupRawMailbox {
  /// A raw message this process holds exclusively until it acknowledges or releases it, or until
  /// its lease (``AppGroupMailboxLimits/claimTimeout``) runs out; the untyped counterpart of
  /// ``AppGroupMailbox/Claim``, with the same semantics and the members every claim has
  /// (``AppGroupMailboxClaimBase``).
  ///
  /// Thread safety: the methods may be called from any thread; they are serialised per claim.
  ///
  /// Lifetime: as ``AppGroupMailbox/Claim``, a claim does not keep its mailbox alive. Once the
  /// mailbox that made it (by ``AppGroupRawMailbox/claimPending(limit:)`` or
  /// ``AppGroupRawMailbox/claim(token:)``) is deallocated, every method throws
  /// ``AppGroupMailboxError/mailboxDeallocated`` and changes nothing: the message stays claimed
  /// until its lease runs out, then it is recovered for another consumer (or finished from any
  /// process through its ``token``). Keep the mailbox while you hold its claims.
  ///
  /// `@unchecked Sendable` as its superclass must be restated; its own stored properties
  /// (`payload`, `messageType`, `payloadVersion` and `token`) are `let`s of `Sendable` types.
  public final class Claim: AppGroupMailboxClaimBase, @unchecked Sendable {
    /// The encoded message, byte for byte as enqueued (one JSON value), starting at index 0.
    /// It lies in the buffer the message file was read into, not in a copy: while it is held,
    /// so is the file's header line (a few hundred bytes more than the payload).
    public let payload: Data
    /// The producer's type tag; empty for an untyped message.
    public let messageType: String
    /// The version of the message's encoded form, as its producer recorded it (the header's
    /// `payloadVersion`; 1 for a message written without one, which is every untyped producer's
    /// and every version-1 type's); see ``AppGroupMailboxVersionedMessage`` and docs/FORMAT.md,
    /// "Payload versions". The raw mailbox delivers every version as stored; a consumer that
    /// reads only some versions checks it.
    public let payloadVersion: Int
    /// The token that names this claim to any process (see ``AppGroupRawMailbox/ClaimToken``
    /// and ``AppGroupRawMailbox/claim(token:)``); a renewal keeps it.
    public let token: ClaimToken

    init(raw: RawClaim, mailbox: AppGroupRawMailbox) {
      self.payload = raw.payload
      self.messageType = raw.header.messageType
      self.payloadVersion = raw.header.declaredPayloadVersion
      self.token = ClaimToken(id: raw.name.message.id, nonce: raw.name.token)
      super.init(raw: raw, owner: mailbox)
    }

    /// When the lease runs out (microsecond precision): after it, any process's maintenance may
    /// recover the message for another consumer. Moved on by ``renew()``; nil once this handle
    /// finished the claim or learned that it no longer exists.
    public var leaseDeadline: Date? { core.leaseDeadline }

    /// Gives up on the message: moves it into `quarantine/` as a dead letter (as a claim does
    /// with a message past ``AppGroupMailboxLimits/maxDeliveryAttempts``), where
    /// `mailboxctl quarantine` can list, requeue or purge it. Reports
    /// ``AppGroupMailboxDiagnostic/deadLetterQuarantined``.
    /// - Throws: as ``acknowledge()``; when the file can be neither moved into `quarantine/` nor
    ///   deleted, ``AppGroupMailboxError/ioFailure(_:)`` (operation `"dead-letter"`) names the
    ///   refused rename and its errno (the delete's with `maxQuarantinedFiles` 0), and the
    ///   message stays claimed.
    public func deadLetter() throws {
      try core.deadLetter()
    }
  }
}
