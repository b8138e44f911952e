import Foundation
import Glibc

extension Spool {
  /// Whether the message of `name` has outlived ``AppGroupMailboxLimits/messageLifetime`` at
  /// `clock` (microseconds): its enqueue time, which every name carries, is the lifetime or more
  /// ago. The one rule for every area and reader (docs/FORMAT.md, "Lifetime").
  func isExpired(_ name: PendingName, at clock: Int64) -> Bool {
    clock - name.key.micros >= limits.messageLifetime.microseconds
  }

  /// Whether the pending message of `name` has been claimed as often as
  /// ``AppGroupMailboxLimits/maxDeliveryAttempts`` allows (or as a name can count,
  /// ``PendingName/maxAttempts``): the next claim quarantines it as a dead letter instead of
  /// delivering it.
  func isDeadLetter(_ name: PendingName) -> Bool {
    name.attempts >= min(limits.maxDeliveryAttempts ?? Int.max, PendingName.maxAttempts)
  }

  /// What ``retireUndeliverable(_:_:at:diagnostics:)`` did with a pending message.
  enum Retirement {
    /// Past its lifetime: expired; `left` as ``expire(_:_:id:diagnostics:)`` returns it.
    case expired(left: Bool)
    /// Claimed as often as the bound allows: quarantined as a dead letter; `left` as
    /// ``quarantine(from:_:id:reason:diagnostics:)`` returns it.
    case deadLettered(left: Bool)
  }

  /// Takes the pending message `name`, the entry `entryName` of `pending/`, out of the line when
  /// no claim will deliver it: expires it when ``isExpired(_:at:)`` at `clock`, else quarantines
  /// it as a dead letter when ``isDeadLetter(_:)``. The one decision of a claim and of a keyed
  /// enqueue that finds such a message holding its key.
  /// - Returns: nil when the message is deliverable (nothing was done).
  /// - Throws: ``SystemCallError`` as ``expire(_:_:id:diagnostics:)`` does.
  func retireUndeliverable(
    _ name: PendingName, _ entryName: String, at clock: Int64,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Retirement? {
    if isExpired(name, at: clock) {
      return .expired(
        left: try expire(directories.pending, entryName, id: name.id, diagnostics: &diagnostics))
    }
    guard isDeadLetter(name) else { return nil }
    return .deadLettered(
      left: quarantine(
        from: directories.pending, entryName, id: name.id, reason: .deadletter,
        diagnostics: &diagnostics))
  }

  /// Deletes the entry `name` of `directory`, a message that outlived
  /// ``AppGroupMailboxLimits/messageLifetime`` (``AppGroupMailboxDiagnostic/expiredMessageRemoved``).
  /// The one expiry of the spool: claims, recovery, promotion and maintenance all expire through
  /// here.
  ///
  /// An entry unlink(2) refuses as such (`EISDIR`, a directory under a message name; `EPERM`) is
  /// not a message: it goes to quarantine as `unsafe` instead, so a hostile entry never stops the
  /// operation that met it; one that can be neither moved nor deleted stays where it is
  /// (``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace``).
  /// - Returns: whether the entry left `directory` (false: it had vanished, or it stays).
  /// - Throws: ``SystemCallError`` for any other failure of unlink(2) (`EACCES` on the area,
  ///   `EROFS`, `EIO`): the area itself cannot be changed.
  @discardableResult
  func expire(
    _ directory: Int32, _ name: some SystemName, id: UUID?,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Bool {
    do {
      try Syscall.unlink(directory, name)
    } catch let error as SystemCallError where error.isNotFound {
      return false
    } catch let error as SystemCallError
      // The move's refusals (``isRefusal(_:)``) but EACCES, which unlink(2) returns for the
      // area's own permissions, not the entry's: that one is thrown.
      where error.errno == .isDirectory || error.errno == .notPermitted || error.errno == .busy
    {
      return quarantine(from: directory, name, id: id, reason: .unsafe, diagnostics: &diagnostics)
    }
    diagnostics.append(.expiredMessageRemoved)
    return true
  }

  /// Brings the entry `name` of `area` (a due delayed message, or a claim whose lease ran out)
  /// back into `pending/` under `message`'s pending name, so at its original place, by the one
  /// move; or, when `expired`, expires it (``expire(_:_:id:diagnostics:)``). The one return to
  /// the line of promotion and recovery. A file whose own inode flags (immutable, append-only)
  /// refuse the move is passed over and stays as it is (``MoveOutcome/stuck``).
  /// - Returns: whether the message is pending now (false: expired, gone, or left in place).
  /// - Throws: ``SystemCallError`` other than `ENOENT` (another process moved it first).
  func restore(
    _ area: Int32, _ name: String, as message: PendingName, expired: Bool,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Bool {
    do {
      if expired {
        try expire(area, name, id: message.id, diagnostics: &diagnostics)
        return false
      }
      return try lockedMove(
        area, name, to: directories.pending, message.fileName, id: message.id,
        passingOverFlagged: true, diagnostics: &diagnostics) == .moved
    } catch let error as SystemCallError where error.isNotFound {
      return false
    }
  }
}
