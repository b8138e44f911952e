public import Foundation

/// What every claim is and does, whichever mailbox made it: ``AppGroupMailbox/Claim`` and
/// ``AppGroupRawMailbox/Claim`` inherit it, so each finish and the renewal are written once.
/// Only this package makes claims; generic code may take either kind as
/// `AppGroupMailboxClaimBase`.
///
/// Thread safety: the methods may be called from any thread; they are serialised per claim.
/// After a recovery gave the message to another consumer, every method of the old claim throws
/// ``AppGroupMailboxError/claimNoLongerExists`` and changes nothing of the new holder's.
///
/// Lifetime: a claim does not keep its mailbox alive. Once the mailbox that made it is
/// deallocated, every method throws ``AppGroupMailboxError/mailboxDeallocated`` and changes
/// nothing: the message stays claimed until its lease runs out, then it is recovered for another
/// consumer. Keep the mailbox while you hold its claims.
///
/// `@unchecked Sendable` because Swift lets only final classes be checked: every stored
/// property here and in the two subclasses is a `let` of a `Sendable` type.
public class AppGroupMailboxClaimBase: @unchecked Sendable {
  /// The message id: stable across redeliveries, so handlers can deduplicate effects.
  public let id: UUID
  /// When the message was enqueued (microsecond precision).
  public let enqueuedAt: Date
  /// 1 on the first delivery, one more each time it is claimed again after a release or a
  /// recovery (not after ``releaseUndelivered()``).
  public let deliveryCount: Int
  /// The message's priority level, ``AppGroupMailboxPriority/lowest`` (0) to
  /// ``AppGroupMailboxPriority/highest`` (9): ``AppGroupMailboxPriority/default`` (5) unless it
  /// was enqueued with another. Read from the message's file name (docs/FORMAT.md, "Names"). A
  /// Linux addition.
  public let priority: Int

  let core: ClaimCore

  init(raw: RawClaim, owner: any ClaimOwner) {
    self.id = raw.name.message.id
    self.enqueuedAt = Date(mailboxMicros: raw.header.enqueuedAt)
    self.deliveryCount = raw.name.message.attempts
    self.priority = raw.name.message.key.level
    self.core = ClaimCore(
      name: raw.name, enqueuedAtMicros: raw.header.enqueuedAt, inode: raw.inode, owner: owner)
  }

  /// Deletes the message: it has been handled.
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when already finished or recovered;
  ///   ``AppGroupMailboxError/mailboxDeallocated``; ``AppGroupMailboxError/ioFailure(_:)``.
  public func acknowledge() throws {
    try core.acknowledge()
  }

  /// Returns the message to pending at its original position; its lifetime is not extended.
  /// - Throws: as ``acknowledge()``.
  public func release() throws {
    try core.release()
  }

  /// Returns the message to pending at its original position as if this claim had not been
  /// made: its delivery count stays what it was before (so ``AppGroupMailboxLimits/
  /// maxDeliveryAttempts`` never makes a dead letter of a message nobody handled). For a claim
  /// whose message was never handed to the code that handles it, such as the rest of a batch
  /// cut short; use ``release()`` once the message was looked at. Watchers see a `putBack`
  /// event. A Linux addition.
  /// - Throws: as ``acknowledge()``.
  public func releaseUndelivered() throws {
    try core.releaseUndelivered()
  }

  /// Returns the message to the mailbox, not claimable for `retryAfter` seconds (it waits in
  /// `delayed/`, still counting toward ``AppGroupMailboxLimits/maxMessages``); when due it goes
  /// back to its original position. A `retryAfter` of 0 or less is a plain ``release()``. Use
  /// ``AppGroupMailboxRetryPolicy`` to choose a delay that grows with ``deliveryCount``. A delay
  /// reaching past the last representable instant (2286, up to infinity) is clamped to it: the
  /// message then expires by its lifetime. A Linux addition.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `retryAfter` when it is NaN (the
  ///   claim is kept); otherwise as ``acknowledge()``.
  public func release(retryAfter: TimeInterval) throws {
    try core.release(retryAfter: retryAfter)
  }

  /// Returns the message to the mailbox as ``release(retryAfter:)`` does, with its delivery
  /// count what it was before this claim, as ``releaseUndelivered()`` keeps it: for a message
  /// its handler could not take yet for a reason that is not the message's (a broker or a
  /// service it forwards to is unreachable), so ``AppGroupMailboxLimits/maxDeliveryAttempts``
  /// never makes a dead letter of it for that. A Linux addition.
  /// - Throws: as ``release(retryAfter:)``.
  public func releaseUndelivered(retryAfter: TimeInterval) throws {
    try core.release(retryAfter: retryAfter, countingDelivery: false)
  }

  /// When the message expires: the mailbox's ``AppGroupMailboxLimits/messageLifetime`` after
  /// the earlier of the time its name holds (a keyed replacement keeps the replaced message's)
  /// and ``enqueuedAt``; a release whose retry delay ends then or later lets it expire before it
  /// is due. Nil once the claim was finished or found gone.
  package var expiresAt: Date? { core.expiresAtMicros.map { Date(mailboxMicros: $0) } }

  /// Starts a fresh lease of ``AppGroupMailboxLimits/claimTimeout`` seconds from now.
  /// - Throws: as ``acknowledge()``.
  public func renew() throws {
    try core.renew()
  }
}
