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
  /// The size is checked before anything is written. On any failure (ENOSPC, EDQUOT, EIO, EMFILE
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
  /// `attempts` is the delivery count the pending name starts with (0 for a new message; a
  /// migration carries over deliveries made in another format). `level` is the priority level
  /// (validated by the caller, ``AppGroupMailboxPriority/levels``), stored in the name.
  ///
  /// With `key` (never together with a not-before time) the message is stored with its key,
  /// and ``resolveKey(_:id:temporary:counters:rewrite:diagnostics:)`` decides, under the lock
  /// and before the depth bound, whether it is kept out, replaces the pending message with the
  /// key, or is published as any other.
  func enqueue(
    payload: Data, id: UUID, messageType: String, explicitMicros: Int64?, unique: Bool,
    notBeforeMicros: Int64? = nil, attempts: Int = 0, key: KeyRequest? = nil,
    level: Int = AppGroupMailboxPriority.default, diagnostics: inout [AppGroupMailboxDiagnostic]
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
      id: id, micros: micros, type: messageType, key: key?.key, payload: payload)
    let temporary = "\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16)).tmp"
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
    let discarded: Bool
    let outcome: EnqueueOutcome
    let area = due == nil ? directories.pending : directories.delayed
    do {
      (outcome, discarded) = try mapIO("enqueue") {
        // Explicit mode whatever the umask (open(2) applies it to the mode given).
        try Syscall.chmod(fd, permissions.fileMode)
        try file.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
        if isDurable { try Syscall.fsync(fd) }
        return try withStateLock { counters -> (EnqueueOutcome, Bool) in
          if unique, try containsMessage(id: id) { return (.duplicate, false) }
          func rewrite(_ id: UUID) throws {
            file = try encodeChecked(
              id: id, micros: micros, type: messageType, key: key?.key, payload: payload)
            try Syscall.truncate(fd, 0)
            try file.withUnsafeBytes { try Syscall.pwriteAll(fd, $0, at: 0) }
            if isDurable { try Syscall.fsync(fd) }
          }
          if let key,
            let decided = try resolveKey(
              key, id: id, temporary: temporary, counters: &counters, superseded: &superseded,
              rewrite: rewrite, diagnostics: &diagnostics)
          {
            return (decided, false)
          }
          let discarded = try makeRoom(&counters, level: level, diagnostics: &diagnostics) > 0
          if explicitMicros == nil, micros < counters.newestImplicitMicros {
            micros = counters.newestImplicitMicros
            try rewrite(id)
          }
          guard counters.sequence < UInt64.max else {
            throw AppGroupMailboxError.ordinalExhausted
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
      throw error
    }
    if discarded { diagnostics.append(.oldestMessageDiscarded) }
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

  /// The message file for these values (with the consumer's payload version), or
  /// ``AppGroupMailboxError/payloadTooLarge`` before anything is written.
  func encodeChecked(id: UUID, micros: Int64, type: String, key: String? = nil, payload: Data)
    throws -> Data
  {
    let file: Data
    do {
      file = try Envelope.encode(
        id: id, enqueuedAt: micros, messageType: type, key: key,
        payloadVersion: configuration.payloadVersions?.current ?? 1, payload: payload)
    } catch {
      throw AppGroupMailboxError.encodingFailure
    }
    refreshSettings()
    guard file.count <= limits.maxPayloadBytes else {
      throw AppGroupMailboxError.payloadTooLarge(
        actualBytes: file.count, maximumBytes: limits.maxPayloadBytes)
    }
    return file
  }

  /// Whether a message with `id` is pending, delayed, claimed or (unless `inQuarantine` is
  /// false) quarantined, from names alone.
  /// - Complexity: O(n) in the entries of those areas.
  func containsMessage(id: UUID, inQuarantine: Bool = true) throws -> Bool {
    for entry in try Syscall.list(directories.pending) {
      if PendingName(parsing: entry.name)?.id == id { return true }
    }
    for entry in try Syscall.list(directories.claimed) {
      if ClaimedName(parsing: entry.name)?.message.id == id { return true }
    }
    for entry in try Syscall.list(directories.delayed) {
      if DelayedName(parsing: entry.name)?.message.id == id { return true }
    }
    guard inQuarantine else { return false }
    for entry in try Syscall.list(directories.quarantine) {
      if QuarantineName(parsing: entry.name)?.id == id { return true }
    }
    return false
  }

  /// Ensures `room` free slots under the depth bound, with the lock held: recounts when the
  /// counter says they are not free (it may be high after a crash), then applies the overflow
  /// policy. Returns how many valid pending messages were discarded: the lowest level first,
  /// oldest first within a level, and never one above `level`, the incoming messages' level
  /// (evicting a more urgent message to admit a less urgent one would invert the priorities).
  /// `discardOldest` evicts nothing unless enough such messages exist to make all the room
  /// (else it throws ``AppGroupMailboxError/mailboxFull``, as ``rejectNewest`` would).
  ///
  /// Before ``AppGroupMailboxOverflowPolicy/discardOldest`` evicts a valid message, every pending
  /// entry that is not one (not a regular file, a persistent hard link, too large, or a file
  /// whose envelope does not read) is quarantined; if that made room, nothing is evicted.
  /// - Complexity: O(n) fstatat(2) calls in the depth when full, plus one open and a read of at
  ///   most 4 KiB per entry not checked before (``verifiedPending`` remembers the rest).
  func makeRoom(
    _ counters: inout SpoolCounters, room: Int = 1, level: Int,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Int {
    guard counters.depth + room > limits.maxMessages else { return 0 }
    counters = try recount(stored: counters)
    guard counters.depth + room > limits.maxMessages else { return 0 }
    guard overflowPolicy == .discardOldest else {
      throw AppGroupMailboxError.mailboxFull
    }
    let (names, foreign) = try pendingListing()
    for entry in foreign {
      quarantine(
        from: directories.pending, entry.exactName, id: nil, reason: .foreign,
        diagnostics: &diagnostics)
    }
    var valid: [(PendingName, DirectoryEntry)] = []
    var contained = 0
    var verified: [String: PendingStamp] = [:]
    let known = verifiedPending.withLock { $0 }
    for (name, entry) in names {
      switch inspectPending(name, entry, known: known) {
      case .gone, .young:
        continue
      case .valid(let stamp):
        verified[entry.name] = stamp
        if name.key.level <= level { valid.append((name, entry)) }
      case .linked:
        // As a claim does: the name goes to quarantine as a copy (see quarantineLinked).
        if quarantineLinked(
          from: directories.pending, entry.name, id: name.id, diagnostics: &diagnostics)
        {
          contained += 1
        }
      case .invalid(let reason):
        if quarantine(
          from: directories.pending, entry.name, id: name.id, reason: reason,
          diagnostics: &diagnostics)
        {
          contained += 1
        }
      }
    }
    verifiedPending.withLock { $0 = verified }
    if contained > 0 {
      counters = try recount(stored: counters)
      guard counters.depth + room > limits.maxMessages else { return 0 }
    }
    guard valid.count >= counters.depth + room - limits.maxMessages else {
      throw AppGroupMailboxError.mailboxFull
    }
    // Evict from the lowest level up (the listing is in claim order: highest level first).
    valid.sort { lhs, rhs in
      let (left, right) = (lhs.0.key, rhs.0.key)
      return left.level != right.level ? left.level < right.level : left < right
    }
    var discarded = 0
    for (_, entry) in valid where counters.depth + room > limits.maxMessages {
      do {
        try Syscall.unlink(directories.pending, entry.name)
      } catch let error as SystemCallError where error.isNotFound {
        continue
      }
      counters.depth -= 1
      discarded += 1
    }
    guard counters.depth + room <= limits.maxMessages else {
      throw AppGroupMailboxError.mailboxFull
    }
    return discarded
  }

  /// What ``inspectPending(_:_:known:)`` found.
  enum PendingInspection {
    case gone
    /// A hard link younger than ``Spool/linkedEntryGrace``: neither evicted nor quarantined.
    case young
    /// A hard link older than ``Spool/linkedEntryGrace``.
    case linked
    case valid(PendingStamp)
    case invalid(QuarantineReason)
  }

  /// Checks a pending entry the way a claim would, without claiming it: the entry itself
  /// (``look(at:clock:)``), then the checked reader on its header
  /// (``readMessage(_:_:id:checkType:extent:unchanged:)``, types ignored: a message of another
  /// type is some consumer's, and eviction ignores types). An entry whose stamp is in `known`
  /// was checked before and is not read again.
  private func inspectPending(
    _ name: PendingName, _ entry: DirectoryEntry, known: [String: PendingStamp]
  ) -> PendingInspection {
    guard let info = try? Syscall.lstat(directories.pending, entry.name) else { return .gone }
    switch look(at: info, clock: now) {
    case .regular: break
    case .notRegular: return .invalid(.unsafe)
    case .youngLink: return .young
    case .oldLink: return .linked
    }
    let stamp = PendingStamp(info)
    if known[entry.name] == stamp { return .valid(stamp) }
    switch try? readMessage(
      directories.pending, entry.name, id: name.id, extent: .header, unchanged: stamp)
    {
    case .success: return .valid(stamp)
    case nil, .failure(.vanished), .failure(.linked): return .gone
    case .failure(let reason): return .invalid(reason.quarantine)
    }
  }
}

/// What identifies a checked pending file's content without reading it again: its inode, size,
/// and modification and change times (a rewrite in place changes the size or the times).
struct PendingStamp: Equatable, Sendable {
  var inode: UInt64
  var size: Int64
  var modified: Int64
  var changed: Int64

  init(_ info: stat) {
    inode = UInt64(info.st_ino)
    size = Int64(info.st_size)
    modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
  }
}
