import Foundation
import Glibc
import MailboxLocks
import Synchronization

/// What a claim's holder does with it: acknowledge (delete), release (back to its place in line)
/// and renew (a fresh lease), each one rename or unlink of the claimed name. A release with a
/// retry delay is in Spool+Delayed.swift.
extension Spool {
  /// Deletes a claim: the message is done. Throws ``AppGroupMailboxError/claimNoLongerExists``
  /// when the claim was recovered (or already finished) and touches nothing then.
  func acknowledge(_ claimed: ClaimedName) throws {
    let removed = try mapIO("acknowledge") {
      try remove { try Syscall.unlink(directories.claimed, claimed.fileName) }
    }
    guard removed else { throw AppGroupMailboxError.claimNoLongerExists }
  }

  /// Puts a claimed message back in `pending/` under its original key (so at its original
  /// position), keeping the delivery count, or, without `countingDelivery` (a claim never handed
  /// to a handler), under the name it had before the claim. When a copy of the message already
  /// sits under that name, the move policy applies
  /// (``move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)``): the message stays once, and this returns
  /// normally.
  func release(_ claimed: ClaimedName, countingDelivery: Bool = true) throws {
    var events: [AppGroupMailboxDiagnostic] = []
    defer { emit(events) }
    var message = claimed.message
    if !countingDelivery { message.attempts = max(0, message.attempts - 1) }
    let outcome = try finishing("release") {
      try lockedMove(
        directories.claimed, claimed.fileName, to: directories.pending, message.fileName,
        id: message.id, diagnostics: &events)
    }
    guard outcome == .moved else { return }
    try mapIO("release") { try flushDirectory(directories.pending) }
    configuration.onPending?()
  }

  /// Starts a fresh lease: renames the claim to a new deadline. Returns the new name.
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when the claim is gone, or when a
  ///   different entry held the new name and the claim went to quarantine (move policy).
  func renew(_ claimed: ClaimedName) throws -> ClaimedName {
    var events: [AppGroupMailboxDiagnostic] = []
    defer { emit(events) }
    var renewed = claimed
    renewed.leaseUntilMicros = min(
      now.addingMicros(limits.claimTimeout.microseconds), MessageKey.maxMicros)
    let outcome = try finishing("renew") {
      try lockedMove(
        directories.claimed, claimed.fileName, to: directories.claimed, renewed.fileName,
        id: claimed.message.id, freshTarget: true, diagnostics: &events)
    }
    guard outcome == .moved || outcome == .duplicate else {
      throw AppGroupMailboxError.claimNoLongerExists
    }
    return renewed
  }

  /// Runs a move of a claim's file, mapping "gone" to `claimNoLongerExists` and other failures
  /// to the operation's error.
  private func finishing(_ operation: String, _ body: () throws -> MoveOutcome) throws
    -> MoveOutcome
  {
    let outcome: MoveOutcome
    do {
      outcome = try body()
    } catch let error as SystemCallError {
      throw error.mailboxError(operation)
    }
    if outcome == .vanished { throw AppGroupMailboxError.claimNoLongerExists }
    return outcome
  }
}

extension Spool {
  /// The name the claim of message `id` with nonce `token` has in `claimed/` now (a renewal by
  /// another handle or process renames it to a new deadline, keeping the nonce); nil when no
  /// such claim is there. With `inode`, only that file counts (a renewal keeps the inode; a
  /// different file under the name, which the move policy put in the claim's place, is not the
  /// claim). A listing may miss an entry renamed while it runs (getdents64(2)), so it looks
  /// twice before answering nil. - Complexity: O(n) in the claimed entries.
  func claimedName(of id: UUID, token: UInt64, inode: UInt64? = nil) throws -> ClaimedName? {
    for _ in 0..<2 {
      let entries = try mapIO("find claim") { try Syscall.list(directories.claimed) }
      for entry in entries {
        guard case .text = entry.exactName, let name = ClaimedName(parsing: entry.name),
          name.message.id == id, name.token == token
        else { continue }
        if let inode {
          guard let info = try? Syscall.lstat(directories.claimed, entry.name),
            UInt64(info.st_ino) == inode
          else { continue }
        }
        return name
      }
    }
    return nil
  }
}
