import Foundation
import Glibc

extension Spool {
  /// ``AppGroupMailboxInspector/status()`` and the pending messages of each priority level
  /// present (``AppGroupMailboxCounts/pendingByPriority``), from one look at each message.
  func inspectStatus() throws -> (status: AppGroupMailboxStatus, pendingByPriority: [Int: Int]) {
    var status = AppGroupMailboxStatus(
      pending: 0, claimed: 0, quarantined: 0, temporaryFiles: 0, oldestPendingEnqueuedAt: nil,
      oldestClaimedAt: nil, bytes: 0)
    var pendingByPriority: [Int: Int] = [:]
    // Each message once (``statSightings(_:_:)``): its state, size, the time its state's
    // figure takes (enqueued, claimed: the inode's change, due) and its priority level (the
    // one-byte members last: 24 bytes a value, as without the level).
    let seen = try statSightings([.pending, .claimed, .delayed]) {
      state, fileName, info -> (UUID, (Int, Int64, AppGroupMailboxEntry.State, UInt8))? in
      let size = Int(info.st_size)
      switch state {
      case .pending:
        return PendingName(parsing: fileName).map {
          ($0.id, (size, $0.key.micros, state, UInt8(truncatingIfNeeded: $0.key.level)))
        }
      case .claimed:
        let changed = Int64(info.st_ctim.tv_sec) * 1_000_000 + Int64(info.st_ctim.tv_nsec) / 1_000
        return ClaimedName(parsing: fileName).map { ($0.message.id, (size, changed, state, 0)) }
      default:
        return DelayedName(parsing: fileName).map {
          ($0.message.id, (size, $0.dueMicros, state, 0))
        }
      }
    }
    var oldestPending: Int64?
    var oldestClaim: Int64?
    var nextDue: Int64?
    for (size, micros, state, level) in seen.values {
      status.bytes += size
      switch state {
      case .pending:
        status.pending += 1
        pendingByPriority[Int(level), default: 0] += 1
        oldestPending = min(oldestPending ?? .max, micros)
      case .claimed:
        status.claimed += 1
        oldestClaim = min(oldestClaim ?? .max, micros)
      default:
        status.delayed += 1
        nextDue = min(nextDue ?? .max, micros)
      }
    }
    for entry in try Syscall.list(directories.quarantine) {
      status.quarantined += 1
      status.bytes += Int(
        (try? Syscall.lstat(directories.quarantine, entry.exactName))?.st_size ?? 0)
    }
    for entry in try Syscall.list(directories.tmp) {
      status.temporaryFiles += 1
      status.bytes += Int((try? Syscall.lstat(directories.tmp, entry.exactName))?.st_size ?? 0)
    }
    status.oldestPendingEnqueuedAt = oldestPending.map(Date.init(mailboxMicros:))
    status.oldestClaimedAt = oldestClaim.map(Date.init(mailboxMicros:))
    status.nextDueAt = nextDue.map(Date.init(mailboxMicros:))
    return (status, pendingByPriority)
  }

  /// The order of an entry within its state: claim order for pending and claimed messages, the
  /// file name (due time first) for delayed ones and for quarantined files.
  private enum ListingOrder: Comparable {
    case claim(MessageKey)
    case name(String)
  }

  /// See ``AppGroupMailboxInspector/entries(in:)``.
  func inspectEntries(_ states: Set<AppGroupMailboxEntry.State>) throws -> [AppGroupMailboxEntry] {
    let seen = try statSightings(states) {
      state, name, info -> (UUID, (ListingOrder, AppGroupMailboxEntry))? in
      let size = Int(info.st_size)
      switch state {
      case .pending:
        return PendingName(parsing: name).map {
          ($0.id, (.claim($0.key), pendingEntry($0, fileName: name, size: size)))
        }
      case .claimed:
        return ClaimedName(parsing: name).map {
          ($0.message.id, (.claim($0.message.key), claimedEntry($0, size: size)))
        }
      default:
        return DelayedName(parsing: name).map {
          ($0.message.id, (.name(name), delayedEntry($0, size: size)))
        }
      }
    }
    var result: [AppGroupMailboxEntry] = []
    for state in [AppGroupMailboxEntry.State.pending, .claimed, .delayed] {
      result += seen.values.filter { $0.1.state == state }.sorted { $0.0 < $1.0 }.map(\.1)
    }
    if states.contains(.quarantined) {
      result += try listed(directories.quarantine) { name, size in
        (name, quarantinedEntry(name, size: size))
      }
    }
    return result
  }

  /// Calls `body` with the name and the lstat(2) description of each entry of `area`; an entry
  /// gone before it was looked at is left out. A name that is not valid UTF-8 is looked at by
  /// its exact bytes and given with U+FFFD in place of its invalid bytes
  /// (``DirectoryEntry/name``).
  /// - Complexity: O(n) in the area's entries.
  private func eachEntry(_ area: Int32, _ body: (String, stat) -> Void) throws {
    // One name at a time: a status at depth 100,000 holds no listing of strings.
    try Syscall.forEachEntry(area) { bytes, _ in
      if let (name, info) = Self.lstatEntry(area, bytes) { body(name, info) }
    }
  }

  /// The name (U+FFFD in place of invalid bytes) and lstat(2) description of the entry of
  /// `area` whose exact bytes are `bytes`; nil when it is gone. The one way the inspector looks
  /// at a listed entry (``eachEntry(_:_:)``, ``statSightings(_:_:)``).
  static func lstatEntry(_ area: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> (String, stat)? {
    let entry = DirectoryEntry(bytes: bytes, type: UInt8(DT_UNKNOWN))
    guard let info = try? Syscall.lstat(area, entry.exactName) else { return nil }
    return (entry.name, info)
  }

  /// The entries of `area` that `describe` (given a name and its size by lstat(2)) makes an
  /// entry of, in the order of the key it gives each; an entry gone before it was looked at is
  /// left out. - Complexity: O(n log n) in the area's entries.
  private func listed<Key: Comparable>(
    _ area: Int32, _ describe: (String, Int) -> (Key, AppGroupMailboxEntry)?
  ) throws -> [AppGroupMailboxEntry] {
    var found: [(Key, AppGroupMailboxEntry)] = []
    try eachEntry(area) { name, info in
      if let described = describe(name, Int(info.st_size)) { found.append(described) }
    }
    return found.sorted { $0.0 < $1.0 }.map(\.1)
  }

  private func pendingEntry(_ name: PendingName, fileName: String, size: Int)
    -> AppGroupMailboxEntry
  {
    AppGroupMailboxEntry(
      id: name.id, state: .pending, enqueuedAt: Date(mailboxMicros: name.key.micros), size: size,
      deliveryCount: name.attempts, fileName: fileName, priority: name.key.level)
  }

  private func claimedEntry(_ name: ClaimedName, size: Int) -> AppGroupMailboxEntry {
    AppGroupMailboxEntry(
      id: name.message.id, state: .claimed,
      enqueuedAt: Date(mailboxMicros: name.message.key.micros),
      size: size, deliveryCount: name.message.attempts, fileName: name.fileName,
      leaseExpiresAt: Date(mailboxMicros: name.leaseUntilMicros), priority: name.message.key.level)
  }

  private func delayedEntry(_ name: DelayedName, size: Int) -> AppGroupMailboxEntry {
    AppGroupMailboxEntry(
      id: name.message.id, state: .delayed,
      enqueuedAt: Date(mailboxMicros: name.message.key.micros), size: size,
      deliveryCount: name.message.attempts, fileName: name.fileName,
      dueAt: Date(mailboxMicros: name.dueMicros), priority: name.message.key.level)
  }

  private func quarantinedEntry(_ fileName: String, size: Int) -> AppGroupMailboxEntry {
    let name = QuarantineName(parsing: fileName)
    return AppGroupMailboxEntry(
      id: name?.id, state: .quarantined, enqueuedAt: nil, size: size, deliveryCount: nil,
      fileName: fileName, quarantinedAt: name.map { Date(mailboxMicros: $0.micros) },
      quarantineReason: name?.reason.rawValue)
  }

  /// See ``AppGroupMailboxInspector/envelope(_:includeMessage:)``.
  func inspectEnvelope(_ selector: String, includeMessage: Bool) throws
    -> AppGroupMailboxEnvelope?
  {
    let wantedID = UUID(uuidString: selector)
    let areas: [(Int32, AppGroupMailboxEntry.State)] = [
      (directories.pending, .pending), (directories.claimed, .claimed),
      (directories.delayed, .delayed), (directories.quarantine, .quarantined),
    ]
    for (directory, state) in areas {
      for entry in try Syscall.list(directory).sorted(by: { $0.name < $1.name }) {
        guard let info = try? Syscall.lstat(directory, entry.name) else { continue }
        let size = Int(info.st_size)
        let listed: AppGroupMailboxEntry?
        switch state {
        case .pending:
          listed = PendingName(parsing: entry.name).map {
            pendingEntry($0, fileName: entry.name, size: size)
          }
        case .claimed:
          listed = ClaimedName(parsing: entry.name).map { claimedEntry($0, size: size) }
        case .delayed:
          listed = DelayedName(parsing: entry.name).map { delayedEntry($0, size: size) }
        case .quarantined:
          listed = quarantinedEntry(entry.name, size: size)
        }
        guard let listed else { continue }
        let matches = wantedID.map { listed.id == $0 } ?? (entry.name == selector)
        guard matches else { continue }
        return try readEnvelope(directory, listed, includeMessage: includeMessage)
      }
    }
    return nil
  }

  /// Reads one file's envelope with the checked reader
  /// (``readMessage(_:_:id:checkType:extent:unchanged:)``); a file the reader refuses is shown
  /// without its envelope's fields, with the reason.
  private func readEnvelope(
    _ directory: Int32, _ entry: AppGroupMailboxEntry, includeMessage: Bool
  ) throws -> AppGroupMailboxEnvelope {
    var envelope = AppGroupMailboxEnvelope(
      entry: entry, format: nil, enqueuedAt: nil, messageType: nil, messageBytes: nil,
      message: nil)
    let read: CheckedMessage
    switch try readMessage(directory, entry.fileName) {
    case .success(let message): read = message
    case .failure(let failure):
      envelope.unreadableReason = failure.shownName
      return envelope
    }
    envelope.format = read.header.format
    envelope.enqueuedAt = Date(mailboxMicros: read.header.enqueuedAt)
    envelope.messageType = read.header.messageType
    envelope.messageBytes = read.messageRange.count
    envelope.payloadVersion = read.header.declaredPayloadVersion
    envelope.key = read.header.key
    if includeMessage { envelope.message = read.message }
    return envelope
  }

  /// See ``AppGroupMailboxInspector/requeueQuarantined(_:)``.
  func requeueQuarantined(_ fileName: String) throws -> AppGroupMailboxRequeueOutcome {
    guard Self.isPlainName(fileName) else { return .notFound }
    let header: EnvelopeHeader
    let read = try mapIO("requeue") { try readMessage(directories.quarantine, fileName) }
    switch read {
    case .success(let read):
      // Not one JSON value: every consumer, typed or untyped, would quarantine it again.
      guard AppGroupRawMailbox.isJSON(read.message) else { return .notAMessage }
      header = read.header
    case .failure(.vanished): return .notFound
    case .failure: return quarantined(fileName) ? .notAMessage : .notFound
    }
    guard let id = UUID(uuidString: header.id) else { return .notAMessage }
    var events: [AppGroupMailboxDiagnostic] = []
    defer { emit(events) }
    let outcome = try mapIO("requeue") {
      try withStateLock { counters -> AppGroupMailboxRequeueOutcome in
        if try containsMessage(id: id, inQuarantine: false) { return .alreadyPresent(id) }
        if counters.depth >= limits.maxMessages {
          counters = try recount(stored: counters)
          if counters.depth >= limits.maxMessages { throw AppGroupMailboxError.mailboxFull }
        }
        let micros = min(max(header.enqueuedAt, 0), MessageKey.maxMicros)
        let name = PendingName(
          key: MessageKey(micros: micros, sequence: counters.sequence + 1), id: id, attempts: 0)
        // Past its lifetime the next claim would delete it: the quarantine keeps the only copy.
        if isExpired(name, at: now) { return .expired(id) }
        // The counters go to disk before the rename, as an enqueue's do: killed, or failing to
        // write `state`, after the rename would leave a depth below the messages on disk (so
        // enqueues pass the bound) and a sequence handed out again. Left high when nothing
        // moved: the depth is an upper bound.
        counters.sequence += 1
        counters.depth += 1
        try persist(counters)
        switch try move(
          directories.quarantine, fileName, to: directories.pending, name.fileName, id: id,
          diagnostics: &events)
        {
        case .vanished: return .notFound
        case .moved: return .requeued(id)
        case .duplicate, .conflict:
          // A leftover held the fresh name: the move policy dropped or quarantined the copy.
          return .alreadyPresent(id)
        case .stuck:  // replaced by an entry that is no file since the read, or purged
          return quarantined(fileName) ? .notAMessage : .notFound
        }
      }
    }
    if case .requeued = outcome {
      try mapIO("requeue") {
        try flushDirectory(directories.pending)
        try flushDirectory(directories.quarantine)
      }
      configuration.onPending?()
    }
    return outcome
  }

  /// Whether `fileName` is still in `quarantine/` (a purge racing a requeue deletes it while
  /// the requeue reads or moves it: that file is not found, not "no message"); true when it
  /// cannot be looked at.
  private func quarantined(_ fileName: String) -> Bool {
    do {
      _ = try Syscall.lstat(directories.quarantine, fileName)
    } catch let error as SystemCallError where error.isNotFound {
      return false
    } catch {}
    return true
  }

  /// See ``AppGroupMailboxInspector/purgeQuarantined(_:)``.
  func purgeQuarantined(_ fileName: String) throws -> Bool {
    guard Self.isPlainName(fileName) else { return false }
    return try mapIO("purge") {
      try requireWritable()
      var removed = false
      // One that cannot be removed does not keep the others of its spelling (below): each is
      // tried, what went is flushed, then the first refusal is thrown.
      var refusal: (any Error)?
      do {
        try removeEntry(directories.quarantine, fileName)
        removed = true
      } catch let error as SystemCallError where error.isNotFound {
      } catch {
        refusal = error
      }
      // A name that is not valid UTF-8 is listed with U+FFFD in place of its invalid bytes:
      // that spelling also names every such entry it stands for, removed by its exact bytes.
      // (Compared as bytes: String equality would take canonically equivalent names alike.)
      if fileName.unicodeScalars.contains("\u{FFFD}") {
        let spelling = Array(fileName.utf8)
        for entry in try Syscall.list(directories.quarantine) {
          guard case .bytes = entry.exactName, Array(entry.name.utf8) == spelling else { continue }
          do {
            try removeEntry(directories.quarantine, entry.exactName)
            removed = true
          } catch let error as SystemCallError where error.isNotFound {
            continue
          } catch {
            refusal = refusal ?? error
          }
        }
      }
      if removed { try flushDirectory(directories.quarantine) }
      if let refusal { throw refusal }
      return removed
    }
  }

  /// A name that stays inside its directory: not empty, `.` or `..`, without `/` or NUL.
  static func isPlainName(_ name: String) -> Bool {
    !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
      && !name.utf8.contains(0)
  }
}

extension Date {
  /// The date `micros` microseconds after the Unix epoch.
  init(mailboxMicros micros: Int64) { self.init(timeIntervalSince1970: Double(micros) / 1_000_000) }
}

extension Spool.ReadFailure {
  /// The name ``AppGroupMailboxEnvelope/unreadableReason`` shows: the quarantine reason's name,
  /// except that a hard-linked file says `linked` and a file gone while it was read `vanished`
  /// (neither is quarantined for that as such).
  var shownName: String {
    switch self {
    case .linked: "linked"
    case .vanished: "vanished"
    default: quarantine.rawValue
    }
  }
}
