/// What ``AppGroupMailbox`` and ``AppGroupRawMailbox`` share, so that each member they have in
/// common is written once: the stored settings (``settings``, ``updateSettings(_:)``) and
/// waiting for work (``wakeUps(pollingInterval:)``, ``wait(timeout:)``,
/// ``drain(batchSize:pollingInterval:handler:)``, ``drainPending(batchSize:handler:)``). Those
/// members act on the mailbox's spool, which they reach through ``inspector``; generic code may
/// take `some AppGroupMailboxProtocol` to serve typed and untyped mailboxes alike.
///
/// Only the two mailbox types of this package conform; another conforming type gets members
/// that act on whatever namespace its ``inspector`` names. Thread and process safety as
/// ``AppGroupMailbox``.
public protocol AppGroupMailboxProtocol: AnyObject, Sendable {
  /// The claim this mailbox hands out: ``AppGroupMailbox/Claim`` or
  /// ``AppGroupRawMailbox/Claim``.
  associatedtype Claim: AppGroupMailboxClaimBase

  /// Counts, listings and quarantine repairs of this namespace; see
  /// ``AppGroupMailboxInspector``.
  var inspector: AppGroupMailboxInspector { get }

  /// Claims up to `limit` pending messages (all when nil); see
  /// ``AppGroupMailbox/claimPending(limit:)``.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"claim limit"`) when `limit` < 0;
  ///   ``AppGroupMailboxError/ioFailure(_:)``.
  func claimPending(limit: Int?) throws -> [Claim]
}

extension AppGroupMailbox: AppGroupMailboxProtocol {}
extension AppGroupRawMailbox: AppGroupMailboxProtocol {}
