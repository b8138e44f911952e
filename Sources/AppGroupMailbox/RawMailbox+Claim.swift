public import Foundation
import MailboxLocks

extension AppGroupRawMailbox {
  /// A raw message this process holds exclusively until it acknowledges or releases it, or until
  /// its lease (``AppGroupMailboxLimits/claimTimeout``) runs out; the untyped counterpart of
  /// ``AppGroupMailbox/Claim``, with the same semantics.
  ///
  /// Thread safety: the methods may be called from any thread; they are serialised per claim.
  /// A claim keeps its mailbox's directories open until it is released from memory.
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

    private let spool: Spool
    private let name: Locked<ClaimedName?>

    init(raw: RawClaim, spool: Spool) {
      self.id = raw.name.message.id
      self.payload = raw.payload
      self.enqueuedAt = Date(mailboxMicros: raw.header.enqueuedAt)
      self.deliveryCount = raw.name.message.attempts
      self.messageType = raw.header.messageType
      self.token = ClaimToken(id: raw.name.message.id, nonce: raw.name.token)
      self.spool = spool
      self.name = Locked(raw.name)
    }

    /// When the lease runs out (microsecond precision): after it, any process's maintenance may
    /// recover the message for another consumer. Moved on by ``renew()``; nil once this handle
    /// finished the claim or learned that it no longer exists.
    public var leaseDeadline: Date? {
      name.withLock { current in current.map { Date(mailboxMicros: $0.leaseUntilMicros) } }
    }

    /// Deletes the message: it has been handled.
    /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when already finished or
    ///   recovered; ``AppGroupMailboxError/ioFailure(_:)``.
    public func acknowledge() throws {
      try finish { spool, name in try spool.acknowledge(name) }
    }

    /// Returns the message to pending at its original position; its lifetime is not extended.
    /// - Throws: as ``acknowledge()``.
    public func release() throws {
      try finish { spool, name in try spool.release(name) }
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
      try finish { spool, name in try spool.release(name, delay: retryAfter) }
    }

    /// Gives up on the message: moves it into `quarantine/` as a dead letter (as a claim does
    /// with a message past ``AppGroupMailboxLimits/maxDeliveryAttempts``), where
    /// `mailboxctl quarantine` can list, requeue or purge it. Reports
    /// ``AppGroupMailboxDiagnostic/deadLetterQuarantined``.
    /// - Throws: as ``acknowledge()``.
    public func deadLetter() throws {
      try finish { spool, name in try spool.deadLetter(name) }
    }

    /// Starts a fresh lease of ``AppGroupMailboxLimits/claimTimeout`` seconds from now.
    /// - Throws: as ``acknowledge()``.
    public func renew() throws {
      try name.withLock { current in
        guard let claimed = current else { throw AppGroupMailboxError.claimNoLongerExists }
        do {
          current = try spool.renew(claimed)
        } catch AppGroupMailboxError.claimNoLongerExists {
          current = nil
          throw AppGroupMailboxError.claimNoLongerExists
        }
      }
    }

    private func finish(_ body: (Spool, ClaimedName) throws -> Void) throws {
      try name.withLock { current in
        guard let claimed = current else { throw AppGroupMailboxError.claimNoLongerExists }
        do {
          try body(spool, claimed)
          current = nil
        } catch AppGroupMailboxError.claimNoLongerExists {
          current = nil
          throw AppGroupMailboxError.claimNoLongerExists
        }
      }
    }
  }
}
