import Foundation
import Glibc
import MailboxLocks
import Synchronization

/// What an enqueue did.
enum EnqueueOutcome: Equatable, Sendable {
  /// The message was published under this name.
  case published(PendingName)
  /// The message was published in `delayed/` under this (future pending) name.
  case delayed(PendingName)
  /// A message with the same id was already pending, delayed, claimed or quarantined; nothing
  /// written.
  case duplicate
  /// Its not-before time lies past its lifetime: it expired at once; nothing written.
  case expired
  /// Keyed with `keep`: the pending message with this id has the key; nothing written.
  case kept(UUID)
  /// Keyed with `replace`: the pending message under this name now holds the new message.
  case replaced(PendingName)
}

extension Spool {
  /// Publishes one message file.
  ///
  /// The file is written under a fresh temporary name in `tmp/`, flushed, then renamed without
  /// replacing into `pending/` while holding the namespace lock (depth bound, id uniqueness,
  /// sequence), and `pending/` is flushed before returning. `explicitMicros` nil means "now",
  /// clamped to the newest implicit time already recorded so insertion order survives a clock
  /// step back.
  ///
  /// The size is checked against the settings this spool knows before anything is written, and
  /// against the mailbox's current settings under the namespace lock before the rename (one
  /// fstatat(2) of `settings` an enqueue, under the lock). On any failure (ENOSPC, EDQUOT, EIO, EMFILE
  /// while writing, flushing or renaming) the temporary file is removed and the error names the
  /// operation, the system call and the errno. When only the final flush of `pending/` fails, the
  /// message is withdrawn again (unless a consumer already claimed it), so an error means "not
  /// enqueued" in every case but that race.
  ///
  /// With `notBeforeMicros` later than now the message goes to `delayed/` instead, keyed to join
  /// the line at that time; one that would outlive `messageLifetime` before it is due, or whose
  /// explicit enqueue date is already `messageLifetime` old, expires at once (nothing written,
  /// ``AppGroupMailboxDiagnostic/expiredMessageRemoved``).
  ///
  /// With `unique`, a message whose id the mailbox holds already is not written
  /// (``EnqueueOutcome/duplicate``): `isPresent` answers that under the namespace lock when
  /// given (a migration keeps its own index of the ids), ``containsMessage(id:inQuarantine:)``
  /// otherwise.
  ///
  /// `attempts` is the delivery count the pending name starts with (0 for a new message; a
  /// migration carries over deliveries made in another format). With `mayDiscard` false a full
  /// mailbox throws ``AppGroupMailboxError/mailboxFull`` whatever the overflow policy (a
  /// migration never evicts: it would delete messages it imported). `level` is the priority level
  /// (validated by the caller, ``AppGroupMailboxPriority/levels``), stored in the name.
  ///
  /// With `key` (never together with a not-before time) the message is stored with its key,
  /// and ``resolveKey(_:id:temporary:counters:rewrite:diagnostics:)`` decides, under the lock
  /// and before the depth bound, whether it is kept out, replaces the pending message with the
  /// key, or is published as any other.
  func enqueue(
    payload: Data, id: UUID, messageType: String, payloadVersion: Int, explicitMicros: Int64?,
    unique: Bool, isPresent: ((UUID) throws -> Bool)? = nil,
    notBeforeMicros: Int64? = nil, attempts: Int = 0, key: KeyRequest? = nil,
    level: Int = AppGroupMailboxPriority.default, mayDiscard: Bool = true,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> EnqueueOutcome {
    var micros =
      explicitMicros.map { min(max($0, 0), MessageKey.maxMicros) }
      ?? max(now, newestImplicitSeen.withLock { $0 })
    let due = notBeforeMicros.flatMap { $0 > now ? min($0, MessageKey.maxMicros) : nil }
    // Expired before it could be claimed (due past its lifetime, or an explicit enqueue date
    // older than it): nothing is written, as the first claim would only delete it.
    if (due ?? now).microsSince(micros) >= limits.messageLifetime.microseconds {
      diagnostics.append(.expiredMessageRemoved)
      return .expired
    }
    var file = try encodeChecked(
      id: id, micros: micros, type: messageType, payloadVersion: payloadVersion, key: key?.key,
      payload: payload)
    let temporary = KernelRandom.temporaryName(".tmp")
    // In a deleted namespace this first step fails (ENOENT): report the removal as a claim does.
    let fd = try removalReported {
      try mapIO("enqueue") {
        try Syscall.open(
          directories.tmp, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
          mode: permissions.fileMode)
      }
    }
    directories.adoptOwner(fd)
    var published = false
    var publishedName: String?
    var superseded: PendingName?  // a keyed replacement's old message, deleted once published
    defer {
      Syscall.close(fd)
      if !published { try? Syscall.unlink(directories.tmp, temporary) }
    }
    let discarded: Int
    let outcome: EnqueueOutcome
    let area = due == nil ? directories.pending : directories.delayed
    do {
      (outcome, discarded) = try mapIO("enqueue") {
        // Explicit mode whatever the umask (open(2) applies it to the mode given).
        try Syscall.chmod(fd, permissions.fileMode)
        try file.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
        if isDurable { try Syscall.fsync(fd) }
        return try withStateLock { counters -> (EnqueueOutcome, Int) in
          try requireWithinPayloadLimit(file.count)
          if unique, try isPresent?(id) ?? containsMessage(id: id) { return (.duplicate, 0) }
          func rewrite(_ id: UUID) throws {
            file = try encodeChecked(
              id: id, micros: micros, type: messageType, payloadVersion: payloadVersion,
              key: key?.key, payload: payload)
            try Syscall.truncate(fd, 0)
            try file.withUnsafeBytes { try Syscall.pwriteAll(fd, $0, at: 0) }
            if isDurable { try Syscall.fsync(fd) }
          }
          if let key,
            let decided = try resolveKey(
              key, id: id, temporary: temporary, counters: &counters, superseded: &superseded,
              rewrite: rewrite, diagnostics: &diagnostics)
          {
            return (decided, 0)
          }
          // The sequence first: a message refused for want of one must not have cost an
          // eviction (deleting one and then refusing would lose it for nothing).
          try makeSequenceRoom(1, in: &counters)
          let discarded = try makeRoom(
            &counters, level: level, mayDiscard: mayDiscard, diagnostics: &diagnostics)
          if explicitMicros == nil, micros < counters.newestImplicitMicros {
            micros = counters.newestImplicitMicros
            try rewrite(id)
          }
          let name = PendingName(
            key: MessageKey(
              micros: due ?? micros, sequence: counters.sequence + 1, level: level),
            id: id, attempts: attempts)
          let target =
            due.map { DelayedName(dueMicros: $0, message: name).fileName } ?? name.fileName
          let before = counters
          counters.sequence += 1
          counters.depth += 1
          if explicitMicros == nil {
            counters.newestImplicitMicros = max(counters.newestImplicitMicros, micros)
          }
          // The counters go to disk before the rename: a producer killed right after publishing
          // must not leave a sequence the next enqueue hands out again, nor a depth one too low.
          // Killed before the rename, it leaves a skipped sequence and a depth one too high,
          // which the recount a full mailbox does corrects.
          try persist(counters)
          let moved: MoveOutcome
          do {
            moved = try move(
              directories.tmp, temporary, to: area, target, id: id, diagnostics: &diagnostics)
            if moved == .vanished {
              throw SystemCallError(call: "renameat2", errno: .noSuchFileOrDirectory)
            }
          } catch {
            counters = before
            try? persist(before)
            throw error
          }
          published = true
          if moved == .moved {
            publishedName = target
          } else {
            // The move policy dropped or quarantined it (a leftover held its fresh name).
            counters = try recount(stored: counters)
          }
          return (due == nil ? .published(name) : .delayed(name), discarded)
        }
      }
    } catch {
      // Published but the counters could not be written (EIO on the state file): withdraw it, so
      // the error means "not enqueued" and the depth counter stays true.
      if let publishedName { try? Syscall.unlink(area, publishedName) }
      // An area deleted meanwhile (a listing of pending/ for room fails with ENOENT) is the
      // mailbox's removal, as at the open above.
      throw reportingRemoval(error)
    }
    // One a deleted message: a depth bound lowered below the depth deletes several at once.
    for _ in 0..<discarded { diagnostics.append(.oldestMessageDiscarded) }
    if let publishedName {
      if explicitMicros == nil { newestImplicitSeen.withLock { $0 = max($0, micros) } }
      do {
        try flushDirectory(area)
      } catch let error as SystemCallError {
        // Not durable: withdraw it, unless a consumer was faster.
        _ = try? remove { try Syscall.unlink(area, publishedName) }
        throw error.mailboxError("enqueue")
      }
    }
    if let superseded, case .published(let name) = outcome {
      // The replacement is durable: the old message goes (unless a consumer was faster).
      _ = try? remove { try Syscall.unlink(directories.pending, superseded.fileName) }
      configuration.onPending?()  // a new pending name, unlike an exchange
      return .replaced(name)
    }
    return outcome
  }

  /// The message file for these values, or ``AppGroupMailboxError/payloadTooLarge`` before
  /// anything is written. `payloadVersion` (validated by the caller) is the typed mailbox's own,
  /// or what an untyped producer passed.
  func encodeChecked(
    id: UUID, micros: Int64, type: String, payloadVersion: Int, key: String? = nil, payload: Data
  ) throws -> Data {
    let file: Data
    do {
      file = try Envelope.encode(
        id: id, enqueuedAt: micros, messageType: type, key: key,
        payloadVersion: payloadVersion, payload: payload)
    } catch {
      throw AppGroupMailboxError.encodingFailure
    }
    // The settings as known; re-read only when they refuse it (another process may have raised
    // the limit). The enqueue checks again under the namespace lock, which re-reads them
    // whenever they changed (``requireWithinPayloadLimit(_:)``).
    if file.count > limits.maxPayloadBytes { refreshSettings() }
    try requireWithinPayloadLimit(file.count)
    return file
  }

  /// Throws ``AppGroupMailboxError/payloadTooLarge(actualBytes:maximumBytes:)`` when a message
  /// file of `bytes` exceeds ``AppGroupMailboxLimits/maxPayloadBytes`` as this spool knows it
  /// (no system call). Under the namespace lock that is the mailbox's current limit, since
  /// ``withStateLock(_:)`` refreshed the settings: a limit another process lowered after the
  /// file was written still refuses it before it is published.
  func requireWithinPayloadLimit(_ bytes: Int) throws {
    let limit = limits.maxPayloadBytes
    guard bytes <= limit else {
      throw AppGroupMailboxError.payloadTooLarge(actualBytes: bytes, maximumBytes: limit)
    }
  }

  /// Whether a message with `id` is pending, delayed, claimed or (unless `inQuarantine` is
  /// false) quarantined, from names alone.
  /// - Complexity: O(n) in the entries of those areas.
  func containsMessage(id: UUID, inQuarantine: Bool = true) throws -> Bool {
    try firstMessageFile(inQuarantine: inQuarantine) { _, _, found in found == id }
  }

  /// Hands every entry of `pending/`, `claimed/`, `delayed/` and (unless `inQuarantine` is
  /// false) `quarantine/` whose name carries a message id to `body`, with its area's descriptor,
  /// in that order, from one listing of each area; stops at the first for which `body` returns
  /// true. Names alone: nothing is opened.
  /// - Returns: Whether `body` returned true.
  /// - Complexity: O(n) in the entries of those areas.
  func firstMessageFile(
    inQuarantine: Bool = true, where body: (Int32, DirectoryEntry, UUID) throws -> Bool
  ) throws -> Bool {
    let areas: [(Int32, (String) -> UUID?)] = [
      (directories.pending, { PendingName(parsing: $0)?.id }),
      (directories.claimed, { ClaimedName(parsing: $0)?.message.id }),
      (directories.delayed, { DelayedName(parsing: $0)?.message.id }),
    ]
    let quarantine: [(Int32, (String) -> UUID?)] =
      inQuarantine ? [(directories.quarantine, { QuarantineName(parsing: $0)?.id })] : []
    for (area, id) in areas + quarantine {
      for entry in try Syscall.list(area) {
        if let found = id(entry.name), try body(area, entry, found) { return true }
      }
    }
    return false
  }
}
