import Foundation
import MailboxLocks
import Synchronization

/// A mailbox object a claim acts through: ``AppGroupMailbox`` or ``AppGroupRawMailbox``.
protocol ClaimOwner: AnyObject, Sendable {
  /// The spool whose `claimed/` area holds the claim.
  var spool: Spool { get }
}

extension AppGroupMailbox: ClaimOwner {}
extension AppGroupRawMailbox: ClaimOwner {}

/// The one claim core behind ``AppGroupMailbox/Claim`` and ``AppGroupRawMailbox/Claim``: the
/// claim's current name, the finishes (acknowledge, release, release with a delay, dead
/// letter), renewal, and the lifetime rule.
///
/// Lifetime: a claim does not keep its mailbox alive. It holds the mailbox object that made it
/// weakly; once that is deallocated, every method throws
/// ``AppGroupMailboxError/mailboxDeallocated`` and changes nothing (the message stays claimed
/// until its lease runs out, then any process's maintenance recovers it for another consumer).
/// This is the rule of the package we follow (its typed claim throws `mailboxDeallocated`),
/// applied to the raw claim too.
///
/// Thread safety: the methods may be called from any thread; they are serialised per claim.
/// A method that finds its name gone looks once for the same claim (message id and nonce, the
/// claim token, and the same file: its inode) under another name, as another handle's renewal
/// leaves it (a handle rebuilt with ``AppGroupRawMailbox/claim(token:)``, `mailboxctl renew
/// TOKEN`), and acts on that; when there is none, it forgets its name, so later calls throw
/// ``AppGroupMailboxError/claimNoLongerExists`` without touching the spool.
final class ClaimCore: Sendable {
  private weak let owner: (any ClaimOwner)?
  /// Not a ``Locked``: a claim is made and dropped per message, and a `Mutex` held inline is
  /// destroyed without the generic deinit's metadata look-ups (docs/PERFORMANCE.md).
  private let name: Mutex<ClaimedName?>
  /// The header's `enqueuedAt` (microseconds): what the message's lifetime counts from.
  let enqueuedAtMicros: Int64
  /// The claimed file's inode, which a renewal keeps.
  let inode: UInt64

  init(name: ClaimedName, enqueuedAtMicros: Int64, inode: UInt64, owner: any ClaimOwner) {
    self.owner = owner
    self.name = Mutex(name)
    self.enqueuedAtMicros = enqueuedAtMicros
    self.inode = inode
  }

  /// The lease deadline; nil once the claim was finished or found gone.
  var leaseDeadline: Date? { leaseUntilMicros.map { Date(mailboxMicros: $0) } }

  /// The lease deadline in microseconds of the mailbox clock; nil once finished or found gone.
  var leaseUntilMicros: Int64? { withName { $0?.leaseUntilMicros } }

  /// When the message expires (microseconds of the mailbox clock): the mailbox's lifetime after
  /// the earlier of its name's time (what `delayed/` and `pending/` expire it by; a keyed
  /// replacement keeps the replaced message's) and its header's `enqueuedAt` (what a claim
  /// expires it by). Nil once the claim was finished or found gone, or its mailbox released.
  var expiresAtMicros: Int64? {
    guard let owner else { return nil }
    let lifetime = owner.spool.limits.messageLifetime.microseconds
    return withName { name in
      name.map { min($0.message.key.micros, enqueuedAtMicros).addingMicros(lifetime) }
    }
  }

  /// Deletes the message (``Spool/acknowledge(_:)``).
  func acknowledge() throws { try finish { spool, name in try spool.acknowledge(name) } }

  /// Puts the message back at its original position (``Spool/release(_:)``).
  func release() throws { try finish { spool, name in try spool.release(name) } }

  /// Puts the message back as it was before the claim, delivery count included
  /// (``Spool/release(_:countingDelivery:)``).
  func releaseUndelivered() throws {
    try finish { spool, name in try spool.release(name, countingDelivery: false) }
  }

  /// Puts the message back, claimable after `delay` seconds, with this delivery counted or not
  /// (``Spool/release(_:delay:countingDelivery:)``).
  func release(retryAfter delay: TimeInterval, countingDelivery: Bool = true) throws {
    try finish { spool, name in
      try spool.release(name, delay: delay, countingDelivery: countingDelivery)
    }
  }

  /// Moves the message to quarantine as a dead letter (``Spool/deadLetter(_:)``).
  func deadLetter() throws { try finish { spool, name in try spool.deadLetter(name) } }

  /// Starts a fresh lease; the claim keeps acting under the renewed name (``Spool/renew(_:)``).
  func renew() throws { try act { spool, name in try spool.renew(name) } }

  /// Runs a finish: on success the claim is done and its name forgotten.
  private func finish(_ body: (Spool, ClaimedName) throws -> Void) throws {
    try act { spool, name in
      try body(spool, name)
      return nil
    }
  }

  /// Runs `body` on the current name under the claim's lock and keeps the name it returns (nil:
  /// finished). Throws ``AppGroupMailboxError/mailboxDeallocated`` when the owner is gone and
  /// ``AppGroupMailboxError/claimNoLongerExists`` when the name was forgotten or `body` found
  /// the claim gone (the name is then forgotten); any other error leaves the claim as it was.
  private func act(_ body: (Spool, ClaimedName) throws -> ClaimedName?) throws {
    guard let owner else { throw AppGroupMailboxError.mailboxDeallocated }
    try withName { current in
      guard let claimed = current else { throw AppGroupMailboxError.claimNoLongerExists }
      do {
        current = try body(owner.spool, claimed)
      } catch AppGroupMailboxError.claimNoLongerExists {
        current = nil
        // Renewed by another handle of the same claim: the nonce stays, the deadline moved.
        guard
          let renamed = try owner.spool.claimedName(
            of: claimed.message.id, token: claimed.token, inode: inode),
          renamed != claimed
        else { throw AppGroupMailboxError.claimNoLongerExists }
        current = try body(owner.spool, renamed)
      }
    }
  }

  /// Runs `body` on the claim's name under its lock.
  private func withName<Result, E: Error>(
    _ body: (inout sending ClaimedName?) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    try name.withAnnotatedLock(at: Unmanaged.passUnretained(self).toOpaque(), body)
  }
}
