package import Foundation
import Glibc

/// What ``AppGroupRawMailbox/migrateLegacySpool(messageType:)`` did.
package struct LegacyMigrationReport: Sendable, Equatable {
  /// Messages written into this mailbox.
  package var imported = 0
  /// Messages this mailbox already held, the same id with the same payload and type tag (an
  /// earlier, interrupted run wrote them, or the old spool held the message twice).
  package var alreadyPresent = 0
  /// Messages whose enqueue date (kept on import) is already the mailbox's `messageLifetime`
  /// old: nothing was written for them and their old files stay where they are, so no message
  /// is lost. Raise the lifetime above the age of ``oldestExpired`` and run again to import them.
  package var expired = 0
  /// The enqueue date of the oldest message counted in ``expired``; nil when there is none.
  package var oldestExpired: Date?
  /// Old files moved into `quarantine/`, kept as they were: old quarantined files, entries that
  /// were not readable messages and messages dated outside what this format stores (before
  /// 1970, after 2286-11-20) (reason `foreign`), and messages whose id this mailbox
  /// already held with another payload or type tag (reason `conflict`).
  package var quarantined = 0
}

/// Why a migration did not run.
package enum LegacyMigrationError: Error, Equatable {
  /// Another process holds `.mailbox.lock`: one of the old format, or another migration.
  case lockHeld
  /// `.mailbox.lock` is not a regular file with one link (a symlink, a directory...).
  case unsafeLock
  /// `needed` old files would go to `quarantine/`, which holds `held` entries and takes at most
  /// `maxQuarantinedFiles`: a migration never deletes an old file, so nothing was moved (raise
  /// the bound to `held + needed` and run again).
  case quarantineFull(needed: Int, held: Int)
}

extension AppGroupRawMailbox {
  /// Converts the old flat layout in this namespace directory (see ``LegacyEntry``) into this
  /// format, in place, and returns what it did.
  ///
  /// Holds the old format's lock (`.mailbox.lock`, flock(2) `LOCK_EX | LOCK_NB`) throughout, so
  /// no old-format process changes the files meanwhile; throws ``LegacyMigrationError/lockHeld``
  /// at once when one holds it. Messages (pending and claimed files) are imported oldest first in
  /// the old order (`enqueuedAt`, then pending name) with their id and `enqueuedAt` and the type
  /// tag `messageType`: a pending file with delivery count 0, a claimed one with 1 (it was handed
  /// out and not finished; the old holder's acknowledge then finds nothing). Each old file is
  /// deleted only after its message was written and flushed (or found already present: the
  /// same id with the same payload, type tag and enqueue date, outside `quarantine/`). An old
  /// message whose id this mailbox already holds otherwise (another old file with that id and
  /// other bytes, or a message of this format) is not written and its old file goes to
  /// `quarantine/` (reason `conflict`); so
  /// is a message dated before 1970 or after 2286-11-20, which this format cannot store (reason
  /// `foreign`: the date is never changed). A
  /// message whose enqueue date is already `messageLifetime` old is not written (it would only
  /// expire) and its old file stays, counted in ``LegacyMigrationReport/expired``: raise the
  /// lifetime and run again. An import finds the id already present after an interrupted run
  /// and writes nothing, so a run killed at any point and run again neither loses nor
  /// duplicates a message, provided no consumer acknowledged an imported message in between
  /// (the mailbox keeps no tombstones: its old file would be imported again). The depth bound
  /// is `rejectNewest`'s whatever the overflow policy: a migration never evicts a message (it
  /// stops with ``AppGroupMailboxError/mailboxFull``). Old quarantined
  /// files and entries that are not readable messages go to `quarantine/` as they are (never
  /// followed or opened).
  ///
  /// - Throws: ``LegacyMigrationError`` (``LegacyMigrationError/quarantineFull(needed:held:)``
  ///   before any change); ``AppGroupMailboxError/payloadTooLarge(actualBytes:maximumBytes:)``
  ///   (an old file over the 64 MiB ceiling: before any change)
  ///   or ``AppGroupMailboxError/mailboxFull`` (raise the limits and run again: what was imported
  ///   stays, the rest stays in the old layout); ``AppGroupMailboxError/ioFailure(_:)``.
  /// - Complexity: O(n log n) in the old files (the sort), plus one listing of each area of this
  ///   mailbox (``MigrationPresence``) and one read per file whose id an old message has.
  package func migrateLegacySpool(messageType: String = "") throws -> LegacyMigrationReport {
    let directory = spool.directories.namespace
    guard try !legacyEntries(directory).isEmpty else { return LegacyMigrationReport() }
    let lock = try legacyLock(directory)
    defer { _ = lock.rawValue }  // held until the import ends
    var report = LegacyMigrationReport()
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    defer { spool.emit(diagnostics) }
    var messages: [(LegacyEntry, LegacyMessage)] = []
    var unreadable: [LegacyEntry] = []
    for entry in try legacyEntries(directory) {
      // An old quarantined file, or a name the old format never wrote (not UTF-8), is moved
      // unread: whoever may read it.
      guard entry.kind != .quarantined, case .text(let name) = entry.exactName else {
        unreadable.append(entry)
        continue
      }
      if let message = try legacyMessage(directory, name) {
        // A date this format cannot store is never clamped: the old file is kept in quarantine.
        if message.micros == nil {
          unreadable.append(entry)
        } else {
          messages.append((entry, message))
        }
      } else {
        try refuseUnpermitted(directory, name)
        unreadable.append(entry)
      }
    }
    messages.sort {
      ($0.1.enqueuedAt, $0.0.originalName) < ($1.1.enqueuedAt, $1.0.originalName)
    }
    var present = try mapIO("migrate") { try MigrationPresence(spool) }
    try reserveQuarantine(
      unreadable.count
        + conflictCount(messages.map(\.1), messageType: messageType, present: present))
    for entry in unreadable
    where try quarantineKept(
      directory, entry.exactName, id: nil, reason: .foreign, diagnostics: &diagnostics)
    {
      report.quarantined += 1
    }
    for (entry, message) in messages {
      let date = Date(timeIntervalSinceReferenceDate: message.enqueuedAt)
      var written: [AppGroupMailboxDiagnostic] = []
      let outcome = try spool.enqueue(
        payload: message.payload, id: message.id, messageType: messageType, payloadVersion: 1,
        explicitMicros: message.micros, unique: true, isPresent: { present.contains($0) },
        attempts: entry.kind == .claimed ? 1 : 0, mayDiscard: false, diagnostics: &written)
      // The old file goes only when the message is in this mailbox: written now, or by an
      // earlier run.
      switch outcome {
      case .published, .delayed, .replaced:
        report.imported += 1
        present.wrote(message)
      case .duplicate:
        // Already present only when it is this very message (a rerun after a crash): another
        // message under the same id is kept in quarantine, never deleted.
        guard try present.holdsSame(message, messageType: messageType, in: spool) else {
          if try quarantineKept(
            directory, entry.exactName, id: message.id, reason: .conflict,
            diagnostics: &diagnostics)
          {
            report.quarantined += 1
          }
          continue
        }
        report.alreadyPresent += 1
      case .expired:
        // Nothing written and nothing removed (so no `expiredMessageRemoved`): the old file
        // stays for a run with a longer lifetime.
        report.expired += 1
        report.oldestExpired = min(report.oldestExpired ?? date, date)
        continue
      case .kept:
        // Needs a key, which a migration never passes; nothing was written: keep the old file.
        continue
      }
      diagnostics += written
      try mapIO("migrate") { try Syscall.unlink(directory, entry.exactName) }
    }
    try mapIO("migrate") { try spool.flushDirectory(directory) }
    if report.imported > 0 { spool.configuration.onPending?() }
    return report
  }

  /// The number of old-format files (pending, claimed and quarantined, see ``LegacyEntry``,
  /// names that are not UTF-8 included) in the namespace directory at `directory`, which
  /// ``migrateLegacySpool(messageType:)`` converts, the same listing; 0 when there are none or
  /// the directory cannot be listed. Only reads the directory (nothing is opened for writing or
  /// followed below it); safe from any thread.
  /// - Complexity: O(n) in the directory's entries.
  package static func legacySpoolFileCount(in directory: URL) -> Int {
    guard
      let opened = try? FileDescriptor.open(
        AT_FDCWD, directory.path, O_RDONLY | O_DIRECTORY, role: .namespaceDirectory)
    else { return 0 }
    return (try? LegacyEntry.list(opened.rawValue).count) ?? 0
  }

  /// The old-format entries of the namespace directory.
  private func legacyEntries(_ directory: Int32) throws -> [LegacyEntry] {
    try mapIO("migrate") { try LegacyEntry.list(directory) }
  }

  /// Throws when `name` is a regular file this process may not read (`EACCES`: another user's
  /// file of mode 0600, in a group-shared mailbox). Such a file is a message the old format's
  /// owner can read, not a damaged one: the migration stops before it changes anything, and
  /// the file's owner or root runs it.
  private func refuseUnpermitted(_ directory: Int32, _ name: String) throws {
    guard let info = try? Syscall.lstat(directory, name), info.st_mode & S_IFMT == S_IFREG,
      faccessat(directory, name, R_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0,
      Errno.current == .permissionDenied
    else { return }
    throw AppGroupMailboxError.ioFailure(
      .init(
        operation: "migrate", systemCall: "faccessat", errno: EACCES,
        role: PathRole.messageFile.rawValue))
  }

  /// Opens and locks `.mailbox.lock` (creating it with the mailbox's file mode, 0600 or 0660
  /// for a group-shared one, so every member can take it); the lock holds until the result ends
  /// (closing drops it, flock(2)). Opened read-only: flock(2) needs no write access, so a lock
  /// file another member created under umask 022 (0644) does not lock the others out.
  private func legacyLock(_ directory: Int32) throws -> FileDescriptor {
    let file: FileDescriptor
    let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK
    do {
      do {
        file = try FileDescriptor.open(
          directory, LegacyEntry.lockName, flags | O_CREAT | O_EXCL,
          mode: spool.permissions.fileMode, role: .legacyLock)
        // Created here: the mode whatever the umask, and the namespace's owner
        // (``SpoolDirectories/adoptOwner(_:)``, for root). An existing one keeps its mode.
        try? Syscall.chmod(file.rawValue, spool.permissions.fileMode)
        spool.directories.adoptOwner(file.rawValue)
      } catch let error as SystemCallError where error.errno == .fileExists {
        file = try FileDescriptor.open(directory, LegacyEntry.lockName, flags, role: .legacyLock)
      }
    } catch let error as SystemCallError where error.errno == .tooManySymbolicLinkLevels {
      throw LegacyMigrationError.unsafeLock
    } catch let error as SystemCallError {
      throw error.mailboxError("migrate")
    }
    do {
      let info = try file.status()
      guard info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
        throw LegacyMigrationError.unsafeLock
      }
      try Syscall.lock(file.rawValue, LOCK_EX | LOCK_NB)
    } catch let error as SystemCallError where error.errno == .wouldBlock {
      throw LegacyMigrationError.lockHeld
    } catch let error as SystemCallError {
      throw error.mailboxError("migrate")
    }
    return file
  }

  /// Reads an old-format message file with the checked reader a claim uses
  /// (``Spool/readEntry(_:_:limit:singleLink:extent:unchanged:)``: no links followed, nothing
  /// that is not a regular file with one link, at most the payload ceiling); nil when it is not
  /// a readable message or its message is not what an enqueue stores (UTF-8 JSON text).
  /// - Throws: ``AppGroupMailboxError/payloadTooLarge(actualBytes:maximumBytes:)`` for a file
  ///   over the ceiling, which may be a message: it is neither read nor moved.
  private func legacyMessage(_ directory: Int32, _ name: String) throws -> LegacyMessage? {
    let ceiling = AppGroupMailboxLimits.payloadCeiling
    let read = try mapIO("migrate") { try spool.readEntry(directory, name, limit: ceiling) }
    if case .failure(.oversized) = read {
      let size = (try? Syscall.lstat(directory, name).st_size).map { Int($0) } ?? ceiling + 1
      throw AppGroupMailboxError.payloadTooLarge(actualBytes: size, maximumBytes: ceiling)
    }
    guard case .success(let (_, bytes)) = read, let message = LegacyMessage(decoding: bytes.array),
      Self.isJSON(message.payload)
    else { return nil }
    return message
  }
}
