import Foundation
import Glibc
import MailboxLocks

extension Spool {
  /// Publishes `payloads` (with their `ids`, same count) as consecutive messages: every file is
  /// written (and flushed at full durability) in `tmp/` first, then all are renamed into
  /// `pending/` under one hold of the namespace lock, and `pending/` is flushed once.
  ///
  /// All messages get the same implicit `enqueuedAt` and consecutive sequences, so they keep
  /// their order. Capacity is checked for the whole batch before anything is published: with
  /// ``AppGroupMailboxOverflowPolicy/rejectNewest`` a batch that does not fit publishes nothing
  /// and throws ``AppGroupMailboxError/mailboxFull``; with `discardOldest` the oldest pending
  /// messages make room. Every message gets `level` (validated by the caller). An I/O error while renaming leaves the messages renamed so far
  /// published (and counted) and throws. Returns how many were published.
  /// - Complexity: O(k) system calls for k messages, plus O(n log n) in the depth only when the
  ///   depth counter says the batch does not fit.
  func enqueueBatch(
    payloads: [Data], ids: [UUID], messageType: String, payloadVersion: Int,
    level: Int = AppGroupMailboxPriority.default, diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Int {
    precondition(payloads.count == ids.count)
    guard !payloads.isEmpty else { return 0 }
    guard payloads.count <= limits.maxMessages else { throw AppGroupMailboxError.mailboxFull }
    var micros = max(now, newestImplicitSeen.withLock { $0 })
    var files = try zip(payloads, ids).map { payload, id in
      try encodeChecked(
        id: id, micros: micros, type: messageType, payloadVersion: payloadVersion,
        payload: payload)
    }
    let prefix = KernelRandom.temporaryName("-")
    let temporaries = files.indices.map { "\(prefix)\($0).tmp" }
    var written = 0
    var published = 0
    defer {
      for name in temporaries[published..<written] { try? Syscall.unlink(directories.tmp, name) }
    }
    try removalReported {  // a deleted namespace fails here first (ENOENT)
      try mapIO("enqueue") {
        for (index, file) in files.enumerated() {
          try write(file, to: temporaries[index], creating: true)
          written += 1
        }
      }
    }
    var discarded = 0
    var conflicts = 0
    var failure: (any Error)?
    try mapIO("enqueue") {
      try withStateLock { counters in
        try requireWithinPayloadLimit(files.map(\.count).max() ?? 0)
        try makeSequenceRoom(files.count, in: &counters)  // before any eviction (see enqueue)
        discarded = try makeRoom(
          &counters, room: files.count, level: level, diagnostics: &diagnostics)
        if micros < counters.newestImplicitMicros {
          micros = counters.newestImplicitMicros
          for index in files.indices {
            files[index] = try encodeChecked(
              id: ids[index], micros: micros, type: messageType,
              payloadVersion: payloadVersion, payload: payloads[index])
            try write(files[index], to: temporaries[index], creating: false)
          }
        }
        let before = counters
        // As for one message (see ``enqueue``): the counters of the whole batch go to disk
        // before the first rename, so a producer killed between renames never leaves a
        // sequence the next enqueue hands out again, nor a depth too low; it leaves skipped
        // sequences and a depth too high, which the recount a full mailbox does corrects.
        counters.sequence += UInt64(files.count)
        counters.depth += files.count
        counters.newestImplicitMicros = max(counters.newestImplicitMicros, micros)
        try persist(counters)
        do {
          for index in files.indices {
            let name = PendingName(
              key: MessageKey(
                micros: micros, sequence: before.sequence + 1 + UInt64(index), level: level),
              id: ids[index], attempts: 0)
            let moved = try move(
              directories.tmp, temporaries[index], to: directories.pending, name.fileName,
              id: ids[index], diagnostics: &diagnostics)
            if moved == .vanished {
              throw SystemCallError(call: "renameat2", errno: .noSuchFileOrDirectory)
            }
            published += 1
            // The move policy dropped or quarantined it: a leftover held its fresh name.
            if moved != .moved { conflicts += 1 }
          }
        } catch {
          // Keep the counters of what was published (written back when the lock is released);
          // rethrow after that.
          counters.sequence = before.sequence + UInt64(published)
          counters.depth = before.depth + published
          if published == 0 { counters.newestImplicitMicros = before.newestImplicitMicros }
          failure = error
        }
        if conflicts > 0 { counters = try recount(stored: counters) }
      }
    }
    for _ in 0..<discarded { diagnostics.append(.oldestMessageDiscarded) }
    if published > 0 {
      newestImplicitSeen.withLock { $0 = max($0, micros) }
      try mapIO("enqueue") { try flushDirectory(directories.pending) }
    }
    if let failure {
      if let error = failure as? SystemCallError { throw error.mailboxError("enqueue") }
      throw failure
    }
    return published
  }

  /// Writes one temporary file (exclusive create, or truncate and rewrite), flushed at full
  /// durability.
  private func write(_ file: Data, to name: String, creating: Bool) throws {
    let flags =
      creating ? O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW : O_WRONLY | O_TRUNC | O_NOFOLLOW
    let fd = try Syscall.open(
      directories.tmp, name, flags, mode: permissions.fileMode)
    defer { Syscall.close(fd) }
    // Explicit mode whatever the umask (open(2) applies it to the mode given).
    if creating {
      try Syscall.chmod(fd, permissions.fileMode)
      directories.adoptOwner(fd)
    }
    try file.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
    if isDurable { try Syscall.fsync(fd) }
  }
}
