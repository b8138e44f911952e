public import Foundation

/// What ``AppGroupMailbox`` and ``AppGroupRawMailbox`` share, so that each member they have in
/// common is written once: ``claimPending()``, ``limits``, ``directoryURL``,
/// ``performMaintenance()``, the stored settings (``settings``, ``updateSettings(_:)``), the
/// hold (``pause()``, ``resume()``, ``isHeld``), ``cancel(id:)``, ``nextDueDate()``,
/// ``nextRecheckDate()`` and waiting for work (``wakeUps(pollingInterval:)``,
/// ``wait(timeout:)``, ``drain(batchSize:pollingInterval:isolation:handler:)``,
/// ``drainPending(batchSize:isolation:handler:)``). Those
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
  ///   ``AppGroupMailboxError/mailboxDirectoryRemoved``; ``AppGroupMailboxError/ioFailure(_:)``.
  func claimPending(limit: Int?) throws -> [Claim]
}

extension AppGroupMailbox: AppGroupMailboxProtocol {}
extension AppGroupRawMailbox: AppGroupMailboxProtocol {}

/// The members of ``AppGroupMailbox`` and ``AppGroupRawMailbox`` that read or maintain the
/// namespace whatever its messages' type.
extension AppGroupMailboxProtocol {
  /// The limits this mailbox enforces: the mailbox's stored settings (see ``settings``), with
  /// this opener's ``AppGroupMailboxLimits/claimTimeout``.
  public var limits: AppGroupMailboxLimits {
    inspector.spool.refreshSettings()
    return inspector.spool.limits
  }

  /// Claims every pending message: ``claimPending(limit:)`` without a limit, for generic code
  /// (a protocol requirement cannot carry the concrete types' default argument).
  /// - Throws: as ``claimPending(limit:)``.
  public func claimPending() throws -> [Claim] { try claimPending(limit: nil) }

  /// The earliest time a delayed message becomes due, or nil when none waits. A consumer with
  /// nothing pending can sleep until then. A due message that promotion passes over because its
  /// file is immutable or append-only (chattr(1); docs/SECURITY.md) counts for no due time.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``.
  /// - Complexity: O(n) in the delayed messages (one listing of `delayed/`).
  public func nextDueDate() throws -> Date? {
    try inspector.spool.nextDueMicros().map(Date.init(mailboxMicros:))
  }

  /// The namespace directory, `<container>/AppGroupMailbox/<namespace>`.
  public var directoryURL: URL {
    URL(fileURLWithPath: inspector.spool.directories.path, isDirectory: true)
  }

  /// Recovers abandoned claims, makes due delayed messages pending, deletes expired messages
  /// and stale temporary files, trims the quarantine and rebuilds the depth counter. Claims and
  /// enqueues already do the first part at most once a second; call this from a timer to bound
  /// disk use while idle.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``.
  /// - Complexity: O(n log n) in the entries of the namespace.
  public func performMaintenance() throws {
    _ = try performMaintenanceCountingPromotions()
  }

  /// ``performMaintenance()``, returning how many delayed messages it made pending (for
  /// `mailboxctl maintain`, whose other counts come from diagnostics).
  package func performMaintenanceCountingPromotions() throws -> Int {
    let spool = inspector.spool
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    defer { spool.emit(diagnostics) }
    return try spool.maintain(diagnostics: &diagnostics)
  }
}
