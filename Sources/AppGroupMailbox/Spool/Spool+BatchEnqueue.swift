import Foundation
import Glibc
import Synchronization

extension Spool {
  /// Publishes `payloads` (with their `ids`, same count) as consecutive messages: every file is
  /// written (and flushed at full durability) in `tmp/` first, then all are renamed into
  /// `pending/` under one hold of the namespace lock, and `pending/` is flushed once.
  ///
  /// All messages get the same implicit `enqueuedAt` and consecutive sequences, so they keep
  /// their order. Capacity is checked for the whole batch before anything is published: with
  /// ``AppGroupMailboxOverflowPolicy/rejectNewest`` a batch that does not fit publishes nothing
  /// and throws ``AppGroupMailboxError/mailboxFull``; with `discardOldest` the oldest pending
  /// messages make room. An I/O error while renaming leaves the messages renamed so far
  /// published (and counted) and throws. Returns how many were published.
  /// - Complexity: O(k) system calls for k messages, plus O(n log n) in the depth only when the
  ///   depth counter says the batch does not fit.
  func enqueueBatch(
    payloads: [Data], ids: [UUID], messageType: String,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Int {
    precondition(payloads.count == ids.count)
    guard !payloads.isEmpty else { return 0 }
    guard payloads.count <= limits.maxMessages else { throw AppGroupMailboxError.mailboxFull }
    var micros = max(now, newestImplicitSeen.withLock { $0 })
    var files = try zip(payloads, ids).map { payload, id in
      try encodeChecked(id: id, micros: micros, type: messageType, payload: payload)
    }
    let prefix = "\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16))-"
    let temporaries = files.indices.map { "\(prefix)\($0).tmp" }
    var written = 0
    var published = 0
    defer {
      for name in temporaries[published..<written] { try? Syscall.unlink(directories.tmp, name) }
    }
    try mapIO("enqueue") {
      for (index, file) in files.enumerated() {
        try write(file, to: temporaries[index], creating: true)
        written += 1
      }
    }
    var discarded = 0
    var failure: (any Error)?
    try mapIO("enqueue") {
      try withStateLock { counters in
        discarded = try makeRoom(for: files.count, &counters)
        if micros < counters.newestImplicitMicros {
          micros = counters.newestImplicitMicros
          for index in files.indices {
            files[index] = try encodeChecked(
              id: ids[index], micros: micros, type: messageType, payload: payloads[index])
            try write(files[index], to: temporaries[index], creating: false)
          }
        }
        guard counters.sequence <= UInt64.max - UInt64(files.count) else {
          throw AppGroupMailboxError.ordinalExhausted
        }
        do {
          for index in files.indices {
            let name = PendingName(
              key: MessageKey(micros: micros, sequence: counters.sequence + 1), id: ids[index],
              attempts: 0)
            try Syscall.renameNoReplace(
              directories.tmp, temporaries[index], directories.pending, name.fileName)
            published += 1
            counters.sequence += 1
            counters.depth += 1
            counters.newestImplicitMicros = max(counters.newestImplicitMicros, micros)
          }
        } catch {
          // Keep the counters of what was published; rethrow after the lock is written back.
          failure = error
        }
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
      directories.tmp, name, flags, mode: configuration.permissions.fileMode)
    defer { Syscall.close(fd) }
    if creating, configuration.permissions == .groupShared {
      try Syscall.chmod(fd, configuration.permissions.fileMode)
    }
    try file.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
    if isDurable { try Syscall.fsync(fd) }
  }

  /// Ensures `count` free slots under the depth bound, with the lock held; returns how many
  /// pending messages `discardOldest` deleted. Throws ``AppGroupMailboxError/mailboxFull``
  /// when the batch cannot fit.
  private func makeRoom(for count: Int, _ counters: inout SpoolCounters) throws -> Int {
    guard counters.depth + count > limits.maxMessages else { return 0 }
    counters = try recount(stored: counters)
    var excess = counters.depth + count - limits.maxMessages
    guard excess > 0 else { return 0 }
    guard configuration.overflowPolicy == .discardOldest else {
      throw AppGroupMailboxError.mailboxFull
    }
    let oldest = try pendingNames()
    guard oldest.count >= excess else { throw AppGroupMailboxError.mailboxFull }
    var discarded = 0
    for (name, _) in oldest where excess > 0 {
      do {
        try Syscall.unlink(directories.pending, name.fileName)
      } catch let error as SystemCallError where error.isNotFound {
        continue
      }
      counters.depth -= 1
      excess -= 1
      discarded += 1
    }
    guard excess == 0 else { throw AppGroupMailboxError.mailboxFull }
    return discarded
  }
}
