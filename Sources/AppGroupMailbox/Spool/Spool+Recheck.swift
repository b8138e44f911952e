import Foundation
import Glibc
import MailboxLocks

extension Spool {
  /// How long (microseconds) a claim waits before it looks again at an entry it could neither
  /// claim nor quarantine (a failed quarantine): one second.
  static let recheckInterval: Int64 = 1_000_000

  /// Records that a claim skipped an entry for now and must look at it again at `micros` (clock
  /// reading): the waiting code (``secondsToNextRecheck()``, used by `wait`, `drain` and
  /// `mailboxctl drain --follow`) never sleeps past it, so a skipped entry is handled by itself
  /// within a bounded time, without another file event (C16).
  func noteRecheck(at micros: Int64) {
    nextRecheck.withLock { $0 = min($0, micros) }
  }

  /// Records the names a claim left in `pending/` for now; `complete` when the claim looked at
  /// every name (it then replaces the record, else it adds to it).
  func noteSkipped(_ names: [PendingName], complete: Bool) {
    let fileNames = names.map(\.fileName)
    skippedNames.withLock { complete ? ($0 = Set(fileNames)) : $0.formUnion(fileNames) }
  }

  /// Seconds until a skipped entry is due for another look (at least 0.001), nil when none
  /// waits. A recheck time that has passed is dropped: the claim that follows the wait looks
  /// again and records a new one if the entry is still skipped.
  func secondsToNextRecheck() -> TimeInterval? {
    let clock = now
    let due = nextRecheck.withLock { due -> Int64? in
      if due == .max { return nil }
      if due < clock - Self.recheckInterval {
        due = .max
        return nil
      }
      return due
    }
    guard let due else { return nil }
    return max(Double(due - clock) / 1_000_000 + 0.001, 0.001)
  }

  /// Quarantines the name `name` of `directory`, a regular file with more than one link past
  /// its grace, as a copy: its bytes (read by the checked reader,
  /// ``readEntry(_:_:limit:singleLink:extent:unchanged:)``, at most the largest payload limit
  /// the mailbox ever had, as a claim reads) are written to a new file in `tmp/` that goes to
  /// quarantine, then the name is unlinked. Quarantine by rename would keep the inode linked,
  /// and every remaining name of it would then count as linked too; this way, when the other
  /// names were all in the spool, the last one is delivered once. A file that cannot be copied
  /// (not a regular file, larger than the limit, unreadable) is quarantined by rename.
  /// - Returns: whether the name left `directory` (see ``quarantine(from:_:id:reason:diagnostics:)``).
  func quarantineLinked(
    from directory: Int32, _ name: String, id: UUID?,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) -> Bool {
    // A file whose own inode flags refuse its delete (chattr(1) +i, +a) keeps this name
    // whatever is done: a copy would be made again at every pass, pushing real records out of
    // quarantine/. It is passed over instead.
    if Self.isFlagged(directory, name) {
      diagnostics.append(.unsafeEntryLeftInPlace)
      return false
    }
    let copy = KernelRandom.temporaryName(".linked.tmp")
    do {
      let bytes: FileBytes
      // Up to the largest limit the mailbox had, as a claim reads: a message written before
      // the limit was lowered is copied, not taken for a hostile file.
      switch try readEntry(directory, name, singleLink: false) {
      case .success(let (_, read)): bytes = read
      case .failure(.vanished): throw SystemCallError(call: "open", errno: .noSuchFileOrDirectory)
      case .failure: throw SystemCallError(call: "fstat", errno: .invalidArgument)
      }
      let outFile = try FileDescriptor.open(
        directories.tmp, copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
        mode: permissions.fileMode, role: .messageFile)
      let out = outFile.rawValue
      try Syscall.chmod(out, permissions.fileMode)
      directories.adoptOwner(out)
      try bytes.withUnsafeBytes { try Syscall.writeAll(out, $0) }
    } catch let error as SystemCallError where error.isNotFound {
      try? Syscall.unlink(directories.tmp, copy)
      return false
    } catch {
      try? Syscall.unlink(directories.tmp, copy)
      return quarantine(
        from: directory, name, id: id, reason: .unsafe, diagnostics: &diagnostics)
    }
    guard
      quarantine(from: directories.tmp, copy, id: id, reason: .unsafe, diagnostics: &diagnostics)
    else {
      try? Syscall.unlink(directories.tmp, copy)
      return false
    }
    do {
      try Syscall.unlink(directory, name)
    } catch let error as SystemCallError where error.isNotFound {
      // Another consumer quarantined the same name at the same time: one copy too many in
      // quarantine, nothing lost or delivered.
    } catch {
      return false
    }
    return true
  }
}
