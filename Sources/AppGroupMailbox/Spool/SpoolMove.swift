import Foundation
import Glibc

/// What ``Spool/move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)`` did with one entry.
enum MoveOutcome: Equatable, Sendable {
  /// The entry now has the target name.
  case moved
  /// The source was gone (ENOENT): another process moved or removed it first. Nothing changed.
  case vanished
  /// The target name was taken by the same file (a second link of the source's inode, as a
  /// crash between the link and the unlink of the fallback leaves) or by a byte-equal copy: the
  /// source was removed as a duplicate (``AppGroupMailboxDiagnostic/duplicateEntryDropped``).
  case duplicate
  /// The target name was taken by a different entry: the source went to quarantine with reason
  /// `conflict` (or was deleted when quarantine cannot take it). Also a source that is not a
  /// regular file whose rename was refused: it went to quarantine with reason `unsafe` (or was
  /// deleted).
  case conflict
  /// The source's rename was refused (`EACCES`, `EPERM` or `EBUSY`) for a reason of the source's
  /// own, and it stays where it is (``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace``): it is
  /// not a regular file (a directory that only its owner may move to another parent) and could
  /// be neither quarantined nor deleted; or, in a move with `passingOverFlagged`, it is a
  /// regular file whose own inode flags (immutable or append-only, chattr(1)) or a mount on it
  /// (`mount --bind` onto the file) refuse every rename and unlink, which was neither
  /// quarantined nor deleted (nothing could). Callers pass over it.
  case stuck

  /// Whether the source left its area without arriving at the target (a counted message may have
  /// left the mailbox: the depth counter needs a recount).
  var removedSource: Bool { self == .duplicate || self == .conflict }
}

extension Spool {
  /// The one move of the spool: every change of area or name of a message (enqueue's publish,
  /// claim, renewal, release, release with delay, promotion, recovery, requeue, a claim put back)
  /// goes through here, with one policy for what a leftover or a crash can leave in the way
  /// (docs/FORMAT.md, "Moves"):
  ///
  /// - The rename never replaces (renameat2(2) `RENAME_NOREPLACE`; where the filesystem lacks it,
  ///   link then unlink, or renameat(2) for a `freshTarget`, whose name carries a new random
  ///   token).
  /// - Target exists (EEXIST): the entry already there stays. When it is the same inode or a
  ///   byte-equal regular file, the source is deleted as a duplicate; otherwise the source goes to
  ///   quarantine with reason `conflict`. Either way nothing is delivered twice and the caller
  ///   gets no error.
  /// - Source vanished (ENOENT): nothing changed; the caller decides what that means (another
  ///   consumer won, the claim was recovered).
  /// - Rename refused (EACCES, EPERM, EBUSY) and the source is not a regular file (a hostile
  ///   entry: a directory another user owns and keeps read-only): it goes to quarantine as
  ///   `unsafe`, or stays, ``MoveOutcome/stuck``, when it can be neither moved nor deleted.
  ///   Never an error that stops the caller's other entries.
  /// - Rename refused and the source is a regular file: with `passingOverFlagged` (the passes
  ///   over entries other processes wrote: a claim, a promotion, a recovery), a file whose own
  ///   inode flags say immutable or append-only, or on which something is mounted (statx(2),
  ///   ``Syscall/moveRefusingAttributes(_:_:)``), stays exactly as it is, ``MoveOutcome/stuck``,
  ///   with no quarantine or delete attempt, and
  ///   ``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace`` is reported. Any other refusal of a
  ///   regular file is thrown: a directory's flags or permissions, a sticky directory,
  ///   `fs.protected_hardlinks` refusing the link fallback, or a move of this process's own file.
  ///
  /// Quarantine itself is not a move through here: its targets are fresh names, and a collision
  /// draws a new nonce (see ``quarantine(from:_:id:reason:diagnostics:)``).
  /// - Throws: ``SystemCallError`` for any other failure (ENOSPC, EIO...).
  /// - Complexity: O(1) system calls; a conflict reads both files (at most
  ///   ``AppGroupMailboxLimits/maxPayloadBytes`` plus one byte each).
  func move(
    _ from: Int32, _ name: some SystemName, to: Int32, _ target: String, id: UUID?,
    freshTarget: Bool = false, passingOverFlagged: Bool = false,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> MoveOutcome {
    do {
      try Syscall.renameNoReplace(from, name, to, target, linkFallback: !freshTarget)
      return .moved
    } catch let error as SystemCallError where error.isNotFound {
      return .vanished
    } catch let error as SystemCallError where error.errno == .fileExists {
      // A rename onto its own name (a renewal within the same microsecond) is no conflict.
      if from == to, name.withSystemName({ String(cString: $0) }) == target { return .moved }
    } catch let error as SystemCallError where Self.isRefusal(error) {
      guard let info = try? Syscall.lstat(from, name) else { throw error }
      if info.st_mode & S_IFMT == S_IFREG {
        // Only the file's own flags make a refusal the entry's: no quarantine or delete (both
        // would be refused as well), the file stays byte for byte.
        guard passingOverFlagged, Self.refusedByOwnFlags(error, from, name) else { throw error }
        diagnostics.append(.unsafeEntryLeftInPlace)
        return .stuck
      }
      if quarantine(from: from, name, id: id, reason: .unsafe, diagnostics: &diagnostics) {
        return .conflict
      }
      return (try? Syscall.lstat(from, name)) == nil ? .vanished : .stuck
    }
    if sameContent(from, name, to, target) {
      do {
        try Syscall.unlink(from, name)
      } catch let error as SystemCallError where error.isNotFound {
        return .vanished
      } catch let error as SystemCallError
        where passingOverFlagged && Self.refusedByOwnFlags(error, from, name)
      {
        // A duplicate the file's own flags keep (a second link of a flagged inode): passed
        // over as the rename's refusal is; the copy at the target is delivered meanwhile.
        diagnostics.append(.unsafeEntryLeftInPlace)
        return .stuck
      }
      diagnostics.append(.duplicateEntryDropped)
      return .duplicate
    }
    let left = quarantine(from: from, name, id: id, reason: .conflict, diagnostics: &diagnostics)
    return left ? .conflict : .vanished
  }

  /// Whether `error` refuses a rename or unlink for a reason that may be the entry's own: EPERM,
  /// EACCES, or EBUSY (something mounted on it).
  static func isRefusal(_ error: SystemCallError) -> Bool {
    error.errno == .permissionDenied || error.errno == .notPermitted || error.errno == .busy
  }

  /// Whether `error`, from a rename or unlink of `name` in `directory`, is a refusal
  /// (``isRefusal(_:)``) that the entry's own attributes explain: a regular file whose flags say
  /// immutable or append-only (chattr(1)), or on which something is mounted (`mount --bind`;
  /// statx(2), ``Syscall/moveRefusingAttributes(_:_:)``). Such an entry can be neither moved nor
  /// deleted by anyone until root clears the flag or unmounts it, so the passes over other
  /// processes' entries leave it in place instead of failing.
  static func refusedByOwnFlags(
    _ error: SystemCallError, _ directory: Int32, _ name: some SystemName
  ) -> Bool {
    guard isRefusal(error),
      let info = try? Syscall.lstat(directory, name), info.st_mode & S_IFMT == S_IFREG
    else { return false }
    return isFlagged(directory, name)
  }

  /// Whether the entry `name` of `directory` carries its own immutable or append-only inode flag
  /// (chattr(1) `+i`, `+a`) or has something mounted on it (statx(2) through
  /// ``Syscall/moveRefusingAttributes(_:_:)``), which refuses every rename and unlink of it.
  /// False when the entry is gone or statx fails: the caller's own move then meets the real
  /// error. One statx(2).
  static func isFlagged(_ directory: Int32, _ name: some SystemName) -> Bool {
    (try? Syscall.moveRefusingAttributes(directory, name)) ?? 0 != 0
  }

  /// Runs ``move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)`` holding the namespace lock (see
  /// ``lockedMove(_:)`` for why), rebuilding the depth counter when the source was dropped or
  /// quarantined.
  func lockedMove(
    _ from: Int32, _ name: some SystemName, to: Int32, _ target: String, id: UUID?,
    freshTarget: Bool = false, passingOverFlagged: Bool = false,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> MoveOutcome {
    var events: [AppGroupMailboxDiagnostic] = []
    let outcome = try withStateLock { counters -> MoveOutcome in
      let outcome = try move(
        from, name, to: to, target, id: id, freshTarget: freshTarget,
        passingOverFlagged: passingOverFlagged, diagnostics: &events)
      if outcome.removedSource { counters = try recount(stored: counters) }
      return outcome
    }
    diagnostics += events
    return outcome
  }

  /// Whether the entries are the same inode, or two regular files with equal bytes (read by
  /// the checked reader, ``readEntry(_:_:limit:singleLink:extent:unchanged:)``, at most the
  /// largest payload limit the mailbox ever had each, as a claim reads (``acceptsMessageSize(_:)``:
  /// a message written before the limit was lowered is still compared); anything unreadable or
  /// larger counts as different).
  func sameContent(
    _ from: Int32, _ name: some SystemName, _ to: Int32, _ target: String
  ) -> Bool {
    guard let source = try? Syscall.lstat(from, name), let other = try? Syscall.lstat(to, target)
    else { return false }
    if source.st_dev == other.st_dev, source.st_ino == other.st_ino { return true }
    guard source.st_mode & S_IFMT == S_IFREG, other.st_mode & S_IFMT == S_IFREG,
      source.st_size == other.st_size, acceptsMessageSize(Int(source.st_size))
    else { return false }
    func bytes(_ directory: Int32, _ entry: some SystemName) -> FileBytes? {
      let read = try? readEntry(directory, entry, singleLink: false)
      guard case .success(let (_, bytes)) = read else { return nil }
      return bytes
    }
    guard let left = bytes(from, name), let right = bytes(to, target) else { return false }
    return left.withUnsafeBytes { one in right.withUnsafeBytes { one.elementsEqual($0) } }
  }
}
