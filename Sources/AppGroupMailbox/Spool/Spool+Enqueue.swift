import Foundation
import Glibc
import Synchronization

/// What an enqueue did.
enum EnqueueOutcome: Equatable, Sendable {
  /// The message was published under this name.
  case published(PendingName)
  /// A message with the same id was already pending, claimed or quarantined; nothing written.
  case duplicate
}

extension Spool {
  /// Publishes one message file.
  ///
  /// The file is written under a fresh temporary name in `tmp/`, flushed, then renamed without
  /// replacing into `pending/` while holding the namespace lock (depth bound, id uniqueness,
  /// sequence), and `pending/` is flushed before returning. `explicitMicros` nil means "now",
  /// clamped to the newest implicit time already recorded so insertion order survives a clock
  /// step back.
  func enqueue(
    payload: Data, id: UUID, messageType: String, explicitMicros: Int64?, unique: Bool,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> EnqueueOutcome {
    var micros =
      explicitMicros.map { min(max($0, 0), MessageKey.maxMicros) }
      ?? max(now, newestImplicitSeen.withLock { $0 })
    var file = try encodeChecked(id: id, micros: micros, type: messageType, payload: payload)
    let temporary = "\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 16)).tmp"
    let fd = try mapIO("enqueue") {
      try Syscall.open(
        directories.tmp, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
        mode: configuration.permissions.fileMode)
    }
    var published = false
    defer {
      Syscall.close(fd)
      if !published { try? Syscall.unlink(directories.tmp, temporary) }
    }
    let discarded: Bool
    let outcome: EnqueueOutcome
    (outcome, discarded) = try mapIO("enqueue") {
      if configuration.permissions == .groupShared {
        try Syscall.chmod(fd, configuration.permissions.fileMode)
      }
      try file.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
      if isDurable { try Syscall.fsync(fd) }
      return try withStateLock { counters -> (EnqueueOutcome, Bool) in
        if unique, try containsMessage(id: id) { return (.duplicate, false) }
        let discarded = try makeRoom(&counters)
        if explicitMicros == nil, micros < counters.newestImplicitMicros {
          micros = counters.newestImplicitMicros
          file = try encodeChecked(id: id, micros: micros, type: messageType, payload: payload)
          try Syscall.truncate(fd, 0)
          try file.withUnsafeBytes { try Syscall.pwriteAll(fd, $0, at: 0) }
          if isDurable { try Syscall.fsync(fd) }
        }
        guard counters.sequence < UInt64.max else {
          throw AppGroupMailboxError.ordinalExhausted
        }
        let name = PendingName(
          key: MessageKey(micros: micros, sequence: counters.sequence + 1), id: id, attempts: 0)
        try Syscall.renameNoReplace(
          directories.tmp, temporary, directories.pending, name.fileName)
        published = true
        counters.sequence += 1
        counters.depth += 1
        if explicitMicros == nil {
          counters.newestImplicitMicros = max(counters.newestImplicitMicros, micros)
        }
        return (.published(name), discarded)
      }
    }
    if discarded { diagnostics.append(.oldestMessageDiscarded) }
    if case .published = outcome {
      if explicitMicros == nil { newestImplicitSeen.withLock { $0 = max($0, micros) } }
      try mapIO("enqueue") { try flushDirectory(directories.pending) }
    }
    return outcome
  }

  /// The message file for these values, or ``AppGroupMailboxError/payloadTooLarge`` before
  /// anything is written.
  func encodeChecked(id: UUID, micros: Int64, type: String, payload: Data) throws -> Data {
    let file: Data
    do {
      file = try Envelope.encode(id: id, enqueuedAt: micros, messageType: type, payload: payload)
    } catch {
      throw AppGroupMailboxError.encodingFailure
    }
    guard file.count <= limits.maxPayloadBytes else {
      throw AppGroupMailboxError.payloadTooLarge(
        actualBytes: file.count, maximumBytes: limits.maxPayloadBytes)
    }
    return file
  }

  /// Whether a message with `id` is pending, claimed or quarantined, from names alone.
  /// - Complexity: O(n) in the entries of those three areas.
  func containsMessage(id: UUID) throws -> Bool {
    for entry in try Syscall.list(directories.pending) {
      if PendingName(parsing: entry.name)?.id == id { return true }
    }
    for entry in try Syscall.list(directories.claimed) {
      if ClaimedName(parsing: entry.name)?.message.id == id { return true }
    }
    for entry in try Syscall.list(directories.quarantine) {
      if QuarantineName(parsing: entry.name)?.id == id { return true }
    }
    return false
  }

  /// Ensures one free slot under the depth bound, with the lock held: recounts when the counter
  /// says full (it may be high after a crash), then applies the overflow policy. Returns whether
  /// a pending message was discarded.
  private func makeRoom(_ counters: inout SpoolCounters) throws -> Bool {
    guard counters.depth >= limits.maxMessages else { return false }
    counters = try recount(stored: counters)
    guard counters.depth >= limits.maxMessages else { return false }
    guard configuration.overflowPolicy == .discardOldest else {
      throw AppGroupMailboxError.mailboxFull
    }
    for (name, _) in try pendingNames() {
      do {
        try Syscall.unlink(directories.pending, name.fileName)
      } catch let error as SystemCallError where error.isNotFound {
        continue
      }
      counters.depth -= 1
      return true
    }
    throw AppGroupMailboxError.mailboxFull
  }
}
