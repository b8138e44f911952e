import Foundation
import Glibc

extension AppGroupRawMailbox {
  /// The number of `messages` (in import order) that an import of this run would move to
  /// quarantine as conflicts, decided as the import decides: a message whose id neither the
  /// mailbox nor an earlier message of the run holds is imported; one with the payload and date
  /// of the earlier message the run imported under its id is already present, any other with
  /// that id a conflict; one whose id the mailbox held is a conflict unless the mailbox holds it
  /// itself (``MigrationPresence/holdsSame``), so every copy of a conflicting message counts.
  /// - Complexity: O(n) in the messages, and one read per file of the mailbox whose id one of
  ///   them has (`present`, ``MigrationPresence/holdsSame(_:messageType:in:)``).
  func conflictCount(
    _ messages: [LegacyMessage], messageType: String, present: MigrationPresence
  ) throws -> Int {
    var imported: [UUID: LegacyMessage] = [:]
    var conflicts = 0
    for message in messages {
      if let earlier = imported[message.id] {
        if earlier.payload != message.payload || earlier.micros != message.micros {
          conflicts += 1
        }
        continue
      }
      guard present.contains(message.id) else {
        imported[message.id] = message
        continue
      }
      if try !present.holdsSame(message, messageType: messageType, in: spool) { conflicts += 1 }
    }
    return conflicts
  }

  /// Throws ``LegacyMigrationError/quarantineFull(needed:held:)`` unless `quarantine/` can take
  /// `count` more entries within ``AppGroupMailboxLimits/maxQuarantinedFiles`` (a migration
  /// never trims: that would delete old files).
  func reserveQuarantine(_ count: Int) throws {
    guard count > 0 else { return }
    let held = try mapIO("migrate") { try Syscall.list(spool.directories.quarantine).count }
    guard held + count <= spool.limits.maxQuarantinedFiles else {
      throw LegacyMigrationError.quarantineFull(needed: count, held: held)
    }
  }

  /// Moves the old file `name` of `directory` into `quarantine/` under a fresh quarantine name,
  /// as ``Spool/quarantine(from:_:id:reason:diagnostics:)`` does but never deleting it: no trim
  /// (``reserveQuarantine(_:)`` first: a full quarantine throws), and a move that fails throws.
  /// - Returns: false when the file had vanished.
  func quarantineKept(
    _ directory: Int32, _ name: EntryName, id: UUID?, reason: QuarantineReason,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Bool {
    try reserveQuarantine(1)
    let moved = try mapIO("migrate") { () throws -> Bool in
      // Every fresh name taken (8 draws of a 32-bit nonce): said as the rename's EEXIST.
      guard
        let moved = try spool.renameIntoQuarantine(from: directory, name, id: id, reason: reason)
      else { throw SystemCallError(call: "renameat2", errno: .fileExists) }
      return moved
    }
    if moved { diagnostics.append(reason.diagnostic) }
    return moved
  }
}
