import Foundation
import Glibc
import MailboxLocks

/// Everything a spool needs to know besides its directories.
struct SpoolConfiguration: Sendable {
  var limits: AppGroupMailboxLimits
  var overflowPolicy: AppGroupMailboxOverflowPolicy
  var durability: AppGroupMailboxDurability
  var permissions: AppGroupMailboxPermissions
  /// The consumer's message type; a message of another type is left pending for its consumer
  /// (see ``MessageTypeTag``). Nil accepts every type (untyped tools).
  var messageTypeTag: MessageTypeTag?
  /// The consumer's payload versions: the one written with each enqueued message, and those a
  /// claim decodes; a message of any other version is left pending like another type's (see
  /// ``AppGroupMailboxVersionedMessage``). Nil writes version 1 and accepts every version.
  var payloadVersions: (any PayloadVersioning)? = nil
  var clock: MailboxClock
  var diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?
  /// Called (outside every lock) after a message became pending: an enqueue, a release or a
  /// recovered claim. The watcher issue posts wake-ups from here.
  var onPending: (@Sendable () -> Void)?

  /// Seconds a temporary file may sit in `tmp/` before it counts as a crashed writer's leftover.
  static let temporaryFileGrace: TimeInterval = 900
}

/// The byte-level mailbox: one namespace's files and the protocol that keeps them consistent.
/// ``AppGroupMailbox`` adds typed encoding on top. Safe from many threads and processes.
final class Spool: Sendable {
  let directories: SpoolDirectories
  let configuration: SpoolConfiguration
  /// In-process exclusion around the flock (threads of one process share its open file
  /// description, so flock(2) alone does not exclude them), and whether this instance has
  /// checked the state file against the listing yet.
  private let lock = Locked<Bool>(false)
  /// The clock reading of the last recovery sweep.
  let lastSweep = Locked<Int64>(Int64.min)
  /// The earliest lease deadline among the claims the last sweep left alone and the claims this
  /// instance made since: a sweep is due as soon as the clock passes it.
  let nextLeaseDeadline = Locked<Int64>(Int64.max)
  /// The newest implicit `enqueuedAt` this process has seen, to clamp before taking the lock.
  let newestImplicitSeen = Locked<Int64>(0)
  /// Pending files the last eviction found valid, by name (see ``makeRoom``).
  let verifiedPending = Locked<[String: FileStamp]>([:])
  /// The clock reading of the last sweep of `tmp/`.
  let lastTemporarySweep = Locked<Int64>(Int64.min)
  /// Counters a body of ``withStateLock(_:)`` already wrote with ``persist(_:)``, so the lock
  /// does not write the same line again. Touched only with `lock` held.
  private let persistedInBody = Locked<SpoolCounters?>(nil)
  /// What the last listing of `delayed/` found (see ``DelayedScan``).
  let delayedScan = Locked<DelayedScan>(DelayedScan())
  /// Pending names known between claims, and the messages this consumer passed over as another
  /// consumer's type (see ``PendingIndex`` and ``PassedOverMarks``).
  let pendingIndex = PendingIndex()
  /// What arrived in `delayed/` and `settings` between claims (see ``SpoolArrivals``).
  let arrivals = SpoolArrivals()
  /// The earliest clock reading at which a claim must look again at an entry it skipped for
  /// now; `Int64.max` when none (see ``noteRecheck(at:)``).
  let nextRecheck = Locked<Int64>(Int64.max)
  /// The pending names the last claims skipped for now, so a wait does not count them as work
  /// before their recheck (see ``noteSkipped(_:complete:)``).
  let skippedNames = Locked<Set<String>>([])

  /// The mailbox's stored settings as last read (see Spool+Settings.swift).
  let settingsCache: Locked<SettingsCache>
  /// Whether the namespace directory is group-shared (setgid and group-writable, as a
  /// group-shared mailbox creates it), read once at open: such a mailbox stays group-shared
  /// whatever its `settings` file says (see ``permissions``).
  let sharedDirectory: Bool

  /// Opens the namespace; see ``SpoolDirectories`` and ``loadSettings``. With `readOnly`
  /// nothing is created or written.
  init(
    container: URL, namespace: String, configuration: SpoolConfiguration, readOnly: Bool = false
  ) throws {
    try mapIO("open mailbox") { try DispatchEventLoop.start() }
    var found: SettingsCache?
    var sharing = configuration.permissions
    var createdNamespace = false
    var sharedDirectory = false
    self.directories = try SpoolDirectories(
      container: container, namespace: namespace, permissions: configuration.permissions,
      readOnly: readOnly
    ) { namespaceFD, created in
      createdNamespace = created
      found = try Self.readSettings(namespaceFD)
      sharedDirectory = Self.sharing(ofDirectory: namespaceFD) == .groupShared
      sharing =
        sharedDirectory
        ? .groupShared
        : found?.settings.permissions ?? (created ? configuration.permissions : .private)
      return sharing
    }
    self.sharedDirectory = sharedDirectory
    self.configuration = configuration
    var initial = configuration.storedSettings
    initial.permissions = sharing
    if found == nil, !readOnly, !createdNamespace {
      found = try Self.awaitCreatorsSettings(directories)
    }
    self.settingsCache = Locked(found ?? SettingsCache(settings: initial))
    if found == nil, !readOnly { try createSettings() }
    // Only what an opener passes: a hold is the mailbox's state, not a choice of the opener.
    var opened = settings
    opened.isHeld = configuration.storedSettings.isHeld
    let differing = opened.differences(from: configuration.storedSettings)
    if !differing.isEmpty { emit([.storedSettingsApplied(differingFields: differing)]) }
  }

  /// The bounds this spool enforces: the mailbox's stored settings with this opener's claim
  /// timeout.
  var limits: AppGroupMailboxLimits {
    settingsCache.withLock { $0.settings }.limits(claimTimeout: configuration.limits.claimTimeout)
  }
  var now: Int64 { configuration.clock.nowMicros() }
  var isDurable: Bool { configuration.durability == .full }

  /// Runs `body` holding the namespace lock with the current counters; writes them back when
  /// `body` changed them. The first use in this instance rebuilds the counters from a listing.
  func withStateLock<T: Sendable>(_ body: (inout SpoolCounters) throws -> T) throws -> T {
    try lock.withLock { validated -> T in
      try requireWritable()
      try Syscall.lock(directories.state, LOCK_EX)
      defer { try? Syscall.lock(directories.state, LOCK_UN) }
      refreshSettings()
      let stored = SpoolCounters(
        line: try Syscall.pread(directories.state, limit: SpoolCounters.lineLength))
      var counters: SpoolCounters
      if let stored, validated {
        counters = stored
      } else {
        counters = try recount(stored: stored)
        validated = true
      }
      persistedInBody.withLock { $0 = nil }
      let result = try body(&counters)
      let written = persistedInBody.withLock { $0 } ?? stored
      if counters != written { try persist(counters) }
      return result
    }
  }

  /// Writes `counters` to the state file now. Call only from a ``withStateLock(_:)`` body.
  func persist(_ counters: SpoolCounters) throws {
    try counters.line.withUnsafeBytes { try Syscall.pwriteAll(directories.state, $0, at: 0) }
    persistedInBody.withLock { $0 = counters }
  }

  /// Counters rebuilt from the names in `pending/`, `claimed/` and `delayed/`, never below what
  /// `stored` says for the sequence and the newest time (a name's sequence above
  /// ``SpoolCounters/sequenceCeiling`` is left out). Entries readdir reports as something
  /// other than a regular file (symlinks, directories, FIFOs...) are not messages and are not
  /// counted. Call with the lock held.
  ///
  /// Without a stored line, the newest implicit time is rebuilt from the pending and claimed
  /// names whose time is not later than now: names cannot say whether a date was explicit, and
  /// an explicitly dated import in the future must never become the clock of later enqueues
  /// (C17). The cost: after a clock step back and a lost `state` file, new messages may sort
  /// before ones enqueued before the step.
  ///
  /// Claims, releases, recoveries and promotions move messages between the areas without the
  /// lock, so a message can leave one listing before it shows up in the next. The areas are
  /// listed as pending, claimed, delayed, pending again, an order in which every single move
  /// (pending to claimed, claimed to pending or delayed, delayed to pending) goes to an area
  /// listed later, and each message (its ordering key and id) is counted once: a message that
  /// moves once during the recount is still seen.
  /// - Complexity: O(n) in the number of entries.
  func recount(stored: SpoolCounters?) throws -> SpoolCounters {
    // Every name of the first three listings, sorted in place (40 bytes a name, no hash set:
    // a fresh consumer at depth recounts once); the second pending listing looks names up.
    var seen = NameHeap()
    var extra = Set<PackedName.Message>()
    var sequence = stored?.sequence ?? 0
    var newest = stored?.newestImplicitMicros ?? 0
    let clock = now
    // A sequence past the ceiling is a planted name's: not counted (SpoolCounters).
    func noteSequence(_ name: PendingName) {
      if name.key.sequence <= SpoolCounters.sequenceCeiling {
        sequence = max(sequence, name.key.sequence)
      }
    }
    func note(_ name: PendingName) {
      noteSequence(name)
      if stored == nil, name.key.micros <= clock { newest = max(newest, name.key.micros) }
    }
    func pendingNames(_ body: (PendingName) -> Void) throws {
      try Syscall.forEachEntry(directories.pending) { bytes, type in
        if !DirectoryEntry.isKnownNotRegular(type), let name = PendingName(bytes: bytes) {
          body(name)
        }
      }
    }
    try pendingNames { name in
      seen.append(name)
      note(name)
    }
    for entry in try Syscall.list(directories.claimed) where !entry.isKnownNotRegular {
      if let name = ClaimedName(parsing: entry.name) {
        seen.append(name.message)
        note(name.message)
      }
    }
    for entry in try Syscall.list(directories.delayed) where !entry.isKnownNotRegular {
      if let name = DelayedName(parsing: entry.name) {
        seen.append(name.message)
        noteSequence(name.message)
      }
    }
    seen.sortDescending()
    try pendingNames { name in
      if !seen.contains(name) { extra.insert(PackedName(name).message) }
      note(name)
    }
    return SpoolCounters(
      sequence: sequence, depth: seen.distinctCount + extra.count, newestImplicitMicros: newest)
  }

  /// Makes sure `count` more sequences fit below ``SpoolCounters/sequenceCeiling``. When they
  /// do not, the counter came from a `state` line written by hand or from a name planted near
  /// the ceiling (9.2 * 10^18 real enqueues would be needed): the counters are rebuilt from the
  /// names alone (keeping the newest implicit time), so the counter is the largest sequence a
  /// message in the mailbox holds, and no live message's sequence is handed out again. Call
  /// with the lock held.
  /// - Throws: ``AppGroupMailboxError/ordinalExhausted`` when even that leaves no room: a
  ///   message with a sequence at the ceiling is in the mailbox (until a consumer takes it).
  func makeSequenceRoom(_ count: Int, in counters: inout SpoolCounters) throws {
    func fits(_ counters: SpoolCounters) -> Bool {
      counters.sequence <= SpoolCounters.sequenceCeiling - UInt64(max(0, count))
    }
    if fits(counters) { return }
    counters = try recount(
      stored: SpoolCounters(
        sequence: 0, depth: 0, newestImplicitMicros: counters.newestImplicitMicros))
    guard fits(counters) else { throw AppGroupMailboxError.ordinalExhausted }
  }

  // Locked moves: ``lockedMove(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)`` (SpoolMove.swift) runs a
  // rename of a counted message between or within the areas (a release, a renewal, a recovery,
  // a promotion, a claim put back) holding the namespace lock. Only a claim (one rename out of
  // `pending/`) moves a message without the lock, and a message cannot be claimed again before
  // a locked move returns it. So while a recount (which holds the lock) runs, each message moves
  // at most once, and the recount's listing order (see ``recount(stored:)``) sees it: the depth
  // bound never rests on a count that missed a message renamed twice, or renamed within
  // `claimed/` (readdir(3) may skip such an entry).

  /// Runs `removal` (an unlink that takes one message out of `pending/`, `claimed/` or
  /// `delayed/`: an acknowledge, an expiry, a cancel, a withdrawn enqueue). Returns false when
  /// the entry was already gone (ENOENT).
  ///
  /// The depth counter stays as it is: it is an upper bound, brought down to the true count by
  /// the recount an enqueue makes when the counter says the mailbox is full (``makeRoom``), so
  /// a removal needs neither the namespace lock nor a write of `state`. Lowering it here would
  /// be wrong whenever the removed message was never counted (placed by another program, or by
  /// hand, since the last recount): the counter would then sit below the messages it did count
  /// and admit one more than the bound (docs/FORMAT.md, "The state file and the lock").
  func remove(_ removal: () throws -> Void) throws -> Bool {
    do {
      try removal()
    } catch let error as SystemCallError where error.isNotFound {
      return false
    }
    return true
  }

  /// `claimPending(limit:)` of both mailbox types: a `limit` of 0 claims nothing and one below 0
  /// throws ``AppGroupMailboxError/invalidLimit(_:)`` (`"claim limit"`); otherwise claims with
  /// ``claim(limit:passingOver:diagnostics:accept:)`` and delivers its diagnostics once every
  /// lock is let go. `accept` keeps a claimed message as the caller's value and returns true, or
  /// returns false when it does not decode (quarantined as malformed). Not generic: each
  /// mailbox type collects its own claims (see ``claim(limit:passingOver:diagnostics:accept:)``).
  func claimPending(
    limit: Int?, passingOver: Set<UUID> = [], accept: (RawClaim) -> Bool
  ) throws {
    if let limit, limit <= 0 {
      guard limit == 0 else { throw AppGroupMailboxError.invalidLimit("claim limit") }
      return
    }
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    defer { emit(diagnostics) }
    _ = try removalReported {
      try claim(limit: limit, passingOver: passingOver, diagnostics: &diagnostics, accept: accept)
    }
  }

  /// Runs `body`; when it fails because the namespace directory or one of its areas was deleted
  /// meanwhile (a listing of a deleted area fails with ENOENT, before any watcher reports the
  /// removal), throws ``AppGroupMailboxError/mailboxDirectoryRemoved`` instead, as a wait would.
  func removalReported<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch {
      throw reportingRemoval(error)
    }
  }

  /// `error`, or ``AppGroupMailboxError/mailboxDirectoryRemoved`` when it is a mailbox error
  /// and the namespace directory or one of its areas is deleted (see ``removalReported(_:)``).
  func reportingRemoval(_ error: any Error) -> any Error {
    guard error is AppGroupMailboxError, directories.isRemoved else { return error }
    return AppGroupMailboxError.mailboxDirectoryRemoved
  }

  /// Delivers diagnostics; call only outside every lock.
  func emit(_ events: [AppGroupMailboxDiagnostic]) {
    guard let sink = configuration.diagnostic else { return }
    for event in events { sink(event) }
  }

  /// Flushes a directory when the durability asks for it.
  func flushDirectory(_ fd: Int32) throws {
    if isDurable { try Syscall.fsync(fd) }
  }

  /// Sorted pending names. - Complexity: O(n log n) in the pending entries.
  func pendingNames() throws -> [(PendingName, DirectoryEntry)] {
    var names: [(PendingName, DirectoryEntry)] = []
    for entry in try Syscall.list(directories.pending) {
      if let name = PendingName(parsing: entry.name) { names.append((name, entry)) }
    }
    names.sort { $0.0.key < $1.0.key }
    return names
  }
}

/// Maps low-level failures to the public error, naming the operation.
@inline(__always)
func mapIO<T>(_ operation: String, _ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as SystemCallError {
    throw error.mailboxError(operation)
  }
}
