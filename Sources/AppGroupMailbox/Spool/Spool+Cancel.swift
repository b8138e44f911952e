import Foundation
import Glibc

extension Spool {
  /// Removes the pending or delayed message `id` (docs/FORMAT.md, "Cancel").
  ///
  /// Everything happens in one hold of the namespace lock, so only the moves made without it can
  /// run meanwhile: a claim (pending to claimed), a quarantine (pending or claimed to
  /// quarantine) and an expiry (an unlink). Every such move goes to an area listed later here
  /// (delayed, pending, claimed, quarantine), so a message that moves while it is looked up is
  /// still found. A claim and a cancel of one pending message race on one name: the rename out
  /// of `pending/` and the unlink of that name are each atomic, so exactly one succeeds; the
  /// loser sees ENOENT. The depth counter stays as it is, as after an acknowledge
  /// (``remove(_:)``).
  /// - Complexity: O(n) in the entries of the four areas (names only; nothing is read).
  func cancel(id: UUID) throws -> AppGroupMailboxCancelOutcome {
    try mapIO("cancel") {
      try withStateLock { _ -> AppGroupMailboxCancelOutcome in
        var removed = 0
        for entry in try Syscall.list(directories.delayed) where !entry.isKnownNotRegular {
          guard case .text = entry.exactName, DelayedName(parsing: entry.name)?.message.id == id
          else { continue }
          if try remove({ try Syscall.unlink(directories.delayed, entry.name) }) {
            removed += 1
          }
        }
        for entry in try Syscall.list(directories.pending) where !entry.isKnownNotRegular {
          guard case .text = entry.exactName, PendingName(parsing: entry.name)?.id == id
          else { continue }
          if try remove({ try Syscall.unlink(directories.pending, entry.name) }) {
            removed += 1
          }
        }
        if removed > 0 { return .cancelled }
        for entry in try Syscall.list(directories.claimed) {
          if ClaimedName(parsing: entry.name)?.message.id == id { return .claimed }
        }
        for entry in try Syscall.list(directories.quarantine) {
          if QuarantineName(parsing: entry.name)?.id == id {
            return .quarantined(fileName: entry.name)
          }
        }
        return .notFound
      }
    }
  }
}
