import Foundation
import Glibc
import Synchronization

/// A message this process holds: its current claimed name and what the file said.
struct RawClaim: Sendable {
  var name: ClaimedName
  var header: EnvelopeHeader
  var payload: Data
}

extension Spool {
  /// Claims up to `limit` messages oldest first, each by one rename into `claimed/`.
  ///
  /// Expired messages met on the way are deleted; hostile or malformed files are quarantined and
  /// do not count toward `limit`; `decode` turns a valid file into the caller's value (nil means
  /// it does not decode: quarantined as malformed). Another consumer winning a rename is not an
  /// error. Candidates come from the spool's ``PendingIndex`` (FIFO across processes; see
  /// there). - Complexity: O(log n) per message claimed and per name that arrived since the
  /// last call; O(n log n) when the index has to list `pending/`.
  func claim<T>(
    limit: Int?, diagnostics: inout [AppGroupMailboxDiagnostic],
    decode: (RawClaim) -> T?
  ) throws -> [T] {
    try sweepIfDue(diagnostics: &diagnostics)
    var results: [T] = []
    let wanted = limit ?? Int.max
    let linkedBefore = linkedSeen.withLock { $0 }
    var linkedNow: [String: Int64] = [:]
    try mapIO("claim") { try pendingIndex.refresh(pending: directories.pending) }
    do {
      while results.count < wanted, let name = pendingIndex.next() {
        try claim(
          name, linkedBefore: linkedBefore, linkedNow: &linkedNow, results: &results,
          diagnostics: &diagnostics, decode: decode)
      }
    } catch {
      pendingIndex.invalidate()
      throw error
    }
    linkedSeen.withLock { $0 = linkedNow }
    return results
  }

  /// Claims one candidate from the index: deletes it when expired, quarantines a dead letter
  /// or a bad file, appends a decoded claim to `results`.
  private func claim<T>(
    _ name: PendingName, linkedBefore: [String: Int64], linkedNow: inout [String: Int64],
    results: inout [T], diagnostics: inout [AppGroupMailboxDiagnostic], decode: (RawClaim) -> T?
  ) throws {
    let clock = now
    if clock - name.key.micros >= limits.messageLifetime.microseconds {
      if (try? Syscall.unlink(directories.pending, name.fileName)) != nil {
        try mapIO("claim") { try decrementDepth() }
        diagnostics.append(.expiredMessageRemoved)
      }
      return
    }
    if let maximum = limits.maxDeliveryAttempts, name.attempts >= maximum {
      try quarantine(
        from: directories.pending, name.fileName, id: name.id, reason: .deadletter,
        counted: true, diagnostics: &diagnostics)
      return
    }
    let claimed = ClaimedName(
      message: PendingName(key: name.key, id: name.id, attempts: name.attempts + 1),
      token: UInt64.random(in: 1 ... .max),
      leaseUntilMicros: clock + limits.claimTimeout.microseconds)
    do {
      try Syscall.rename(
        directories.pending, name.fileName, directories.claimed, claimed.fileName)
    } catch let error as SystemCallError where error.isNotFound {
      pendingIndex.note(stale: true)  // another consumer won
      return
    } catch let error as SystemCallError {
      throw error.mailboxError("claim")
    }
    pendingIndex.note(stale: false)
    switch try read(claimed, type: UInt8(DT_UNKNOWN)) {
    case .success(let raw):
      if let value = decode(raw) {
        results.append(value)
      } else {
        try quarantine(
          from: directories.claimed, claimed.fileName, id: name.id, reason: .malformed,
          counted: true, diagnostics: &diagnostics)
      }
    case .failure(.linked):
      // A mover falling back to link-then-unlink shows two links for an instant: put it back
      // and look again later; quarantine it only when it was already linked last time.
      if let first = linkedBefore[name.fileName], clock - first >= 1_000_000 {
        try quarantine(
          from: directories.claimed, claimed.fileName, id: name.id, reason: .unsafe,
          counted: true, diagnostics: &diagnostics)
      } else {
        linkedNow[name.fileName] = linkedBefore[name.fileName] ?? clock
        try? Syscall.renameNoReplace(
          directories.claimed, claimed.fileName, directories.pending, name.fileName)
      }
    case .failure(let reason):
      try quarantine(
        from: directories.claimed, claimed.fileName, id: name.id, reason: reason.quarantine,
        counted: true, diagnostics: &diagnostics)
    }
  }

  /// Why a claimed file cannot be delivered.
  enum ReadFailure: Error {
    case unsafe, linked, oversized, malformed, future, wrongType

    var quarantine: QuarantineReason {
      switch self {
      case .unsafe, .linked: .unsafe
      case .oversized: .oversized
      case .malformed: .malformed
      case .future: .future
      case .wrongType: .wrongtype
      }
    }
  }

  /// Reads and checks one claimed file: opened without following links or blocking, checked on
  /// the descriptor (regular, one link, size) before a byte is read, read at most to the limit
  /// plus one byte, its envelope and type verified.
  func read(_ claimed: ClaimedName, type: UInt8) throws -> Result<RawClaim, ReadFailure> {
    if type != UInt8(DT_REG) && type != UInt8(DT_UNKNOWN) { return .failure(.unsafe) }
    if type == UInt8(DT_UNKNOWN) {
      // Names from inotify (or a filesystem without d_type) carry no type: look at the entry
      // itself first, so a device or FIFO is never opened.
      guard let info = try? Syscall.lstat(directories.claimed, claimed.fileName) else {
        return .failure(.unsafe)
      }
      if info.st_mode & S_IFMT != S_IFREG { return .failure(.unsafe) }
    }
    let fd: Int32
    do {
      fd = try Syscall.open(
        directories.claimed, claimed.fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    } catch let error as SystemCallError
      where error.errno == ELOOP || error.errno == ENXIO || error.errno == EISDIR
      || error.errno == EWOULDBLOCK
    {
      return .failure(.unsafe)
    } catch let error as SystemCallError {
      throw error.mailboxError("claim")
    }
    defer { Syscall.close(fd) }
    let info = try mapIO("claim") { try Syscall.fstat(fd) }
    guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.unsafe) }
    guard info.st_nlink == 1 else { return .failure(.linked) }
    let maximum = limits.maxPayloadBytes
    guard info.st_size <= maximum else { return .failure(.oversized) }
    // Read exactly the size fstat reported (already checked against the cap): the buffer is
    // sized by the file, not by the payload limit, and an intact file takes one pread(2). A
    // writer still holding the file (a producer bug) can change it under any reader; what is
    // read is then a snapshot never longer than the cap, judged like any other content.
    let bytes = try mapIO("claim") { try Syscall.pread(fd, limit: Int(info.st_size)) }
    guard bytes.count <= maximum else { return .failure(.oversized) }
    let header: EnvelopeHeader
    let range: Range<Int>
    do {
      (header, range) = try Envelope.decode(bytes)
    } catch .futureFormat {
      return .failure(.future)
    } catch {
      return .failure(.malformed)
    }
    guard NameBytes.parseUUID(header.id.utf8) ?? UUID(uuidString: header.id) == claimed.message.id
    else { return .failure(.malformed) }
    if let expected = configuration.expectedMessageType, !header.messageType.isEmpty,
      header.messageType != expected
    {
      return .failure(.wrongType)
    }
    return .success(RawClaim(name: claimed, header: header, payload: Data(bytes[range])))
  }

  /// Deletes a claim: the message is done. Throws ``AppGroupMailboxError/claimNoLongerExists``
  /// when the claim was recovered (or already finished) and touches nothing then.
  func acknowledge(_ claimed: ClaimedName) throws {
    try finishing("acknowledge") { try Syscall.unlink(directories.claimed, claimed.fileName) }
    try mapIO("acknowledge") { try decrementDepth() }
  }

  /// Puts a claimed message back in `pending/` under its original key (so at its original
  /// position), keeping the delivery count.
  func release(_ claimed: ClaimedName) throws {
    try finishing("release") {
      try Syscall.renameNoReplace(
        directories.claimed, claimed.fileName, directories.pending, claimed.message.fileName)
    }
    try mapIO("release") { try flushDirectory(directories.pending) }
    configuration.onPending?()
  }

  /// Starts a fresh lease: renames the claim to a new deadline. Returns the new name.
  func renew(_ claimed: ClaimedName) throws -> ClaimedName {
    var renewed = claimed
    renewed.leaseUntilMicros = min(
      now + limits.claimTimeout.microseconds, MessageKey.maxMicros)
    try finishing("renew") {
      try Syscall.rename(
        directories.claimed, claimed.fileName, directories.claimed, renewed.fileName)
    }
    return renewed
  }

  /// Runs an operation on a claim's file, mapping "gone" to `claimNoLongerExists`.
  private func finishing(_ operation: String, _ body: () throws -> Void) throws {
    do {
      try body()
    } catch let error as SystemCallError where error.isNotFound {
      throw AppGroupMailboxError.claimNoLongerExists
    } catch let error as SystemCallError {
      throw error.mailboxError(operation)
    }
  }
}
