public import Foundation

/// What ``AppGroupMailboxProtocol/cancel(id:)`` found (a Linux addition).
public enum AppGroupMailboxCancelOutcome: Sendable, Equatable, Hashable {
  /// The message was pending or delayed and is gone: no consumer will get it. The depth went
  /// down by one.
  case cancelled
  /// A consumer holds the message; nothing was changed. Its holder decides: an acknowledge
  /// ends it, a release or a lease that runs out puts it back (cancellable then). A consumer
  /// of another message type holds it for the instant in which it looks at it and puts it back.
  case claimed
  /// The message is in quarantine under `fileName`; nothing was changed. Purge it with
  /// ``AppGroupMailboxInspector/purgeQuarantined(_:)`` (`mailboxctl quarantine purge`).
  case quarantined(fileName: String)
  /// No message has this id: never enqueued, or already acknowledged, expired, discarded or
  /// cancelled.
  case notFound
}

extension AppGroupMailboxProtocol {
  /// Cancels the pending or delayed message `id` (as an enqueue returned it): deletes it so that
  /// no consumer gets it. Any message type may be cancelled.
  ///
  /// A claimed message is left to its holder, a quarantined one to
  /// ``AppGroupMailboxInspector/purgeQuarantined(_:)``; the outcome says which. Raced with a
  /// claim of the same message in any process, exactly one wins: either the claim returns the
  /// message and this returns ``AppGroupMailboxCancelOutcome/claimed`` (or
  /// ``AppGroupMailboxCancelOutcome/notFound`` once it was acknowledged), or this returns
  /// ``AppGroupMailboxCancelOutcome/cancelled`` and no claim returns it. Runs in one hold of the
  /// namespace lock; like an acknowledge, it leaves the depth counter (an upper bound) as it is
  /// (docs/FORMAT.md, "Cancel"). Safe from any thread and process.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)`` (operation `"cancel"`).
  /// - Complexity: O(n) in the entries of the namespace (names only; no file is read).
  public func cancel(id: UUID) throws -> AppGroupMailboxCancelOutcome {
    try inspector.spool.cancel(id: id)
  }
}

extension AppGroupMailbox {
  /// What ``AppGroupMailboxProtocol/cancel(id:)`` found; see ``AppGroupMailboxCancelOutcome``.
  public typealias CancelOutcome = AppGroupMailboxCancelOutcome
}
