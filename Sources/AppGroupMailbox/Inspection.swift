public import Foundation

/// Counts for one namespace, read from the names and sizes of its files (no message is read).
///
/// A snapshot: other processes may change the mailbox while it is taken, so the numbers are
/// consistent per area, not across areas.
public struct AppGroupMailboxStatus: Sendable, Equatable, Hashable, Codable {
  /// Messages waiting to be claimed (valid message names in `pending/`).
  public var pending: Int
  /// Messages held by a consumer (valid claim names in `claimed/`).
  public var claimed: Int
  /// Messages not due yet (valid names in `delayed/`): delayed enqueues and messages released
  /// with a retry delay. They are not pending, but count toward
  /// ``AppGroupMailboxLimits/maxMessages``.
  public var delayed: Int
  /// Files in `quarantine/`.
  public var quarantined: Int
  /// Files in `tmp/`: enqueues in progress, or a crashed writer's leftovers (swept after 15
  /// minutes).
  public var temporaryFiles: Int
  /// The `enqueuedAt` of the oldest pending message; nil when none is pending.
  public var oldestPendingEnqueuedAt: Date?
  /// When the oldest live claim was taken or last renewed (the file's status-change time, which
  /// rename(2) sets on Linux filesystems); nil when nothing is claimed.
  public var oldestClaimedAt: Date?
  /// The earliest time a delayed message becomes due; nil when none waits.
  public var nextDueAt: Date?
  /// Total size in bytes of the files in all five areas.
  public var bytes: Int

  /// What counts toward ``AppGroupMailboxLimits/maxMessages``: pending plus delayed plus
  /// claimed.
  public var depth: Int { pending + delayed + claimed }

  /// Creates a status value.
  public init(
    pending: Int, claimed: Int, quarantined: Int, temporaryFiles: Int,
    oldestPendingEnqueuedAt: Date?, oldestClaimedAt: Date?, bytes: Int, delayed: Int = 0,
    nextDueAt: Date? = nil
  ) {
    self.pending = pending
    self.claimed = claimed
    self.delayed = delayed
    self.quarantined = quarantined
    self.temporaryFiles = temporaryFiles
    self.oldestPendingEnqueuedAt = oldestPendingEnqueuedAt
    self.oldestClaimedAt = oldestClaimedAt
    self.nextDueAt = nextDueAt
    self.bytes = bytes
  }
}

/// One file of a mailbox as its name describes it; never its contents.
public struct AppGroupMailboxEntry: Sendable, Equatable, Hashable {
  /// Where the file is.
  public enum State: String, Sendable, Equatable, Hashable, CaseIterable {
    /// In `pending/`, waiting to be claimed.
    case pending
    /// In `claimed/`, held by a consumer.
    case claimed
    /// In `delayed/`, not claimable before its due time (``AppGroupMailboxEntry/dueAt``).
    case delayed
    /// In `quarantine/`, never delivered again unless requeued.
    case quarantined
  }

  /// The message id; nil for a quarantined file whose id is unknown.
  public var id: UUID?
  /// The area the file is in.
  public var state: State
  /// The time of the message's place in line, from its name: when it was enqueued, or for a
  /// message enqueued with a not-before time, that due time (where it joins the line; the
  /// envelope, ``AppGroupMailboxEnvelope/enqueuedAt``, keeps the enqueue time). Nil for a
  /// quarantined file (its name does not say).
  public var enqueuedAt: Date?
  /// The file size in bytes (envelope header plus message).
  public var size: Int
  /// Deliveries so far (a claimed message counts its current one; a delayed one counts the
  /// deliveries before it was released with a delay); nil for a quarantined file.
  public var deliveryCount: Int?
  /// The file name inside its area (see docs/FORMAT.md).
  public var fileName: String
  /// When a claim's lease runs out; nil unless claimed.
  public var leaseExpiresAt: Date?
  /// When a delayed message becomes due (claimable); nil unless delayed.
  public var dueAt: Date?
  /// When the file was quarantined; nil unless quarantined with a quarantine name.
  public var quarantinedAt: Date?
  /// Why the file was quarantined (`unsafe`, `malformed`, `oversized`, `future`, `deadletter`,
  /// `foreign`; `wrongtype` from earlier versions); nil unless quarantined with a quarantine
  /// name.
  public var quarantineReason: String?
  /// The message's priority level from its name, ``AppGroupMailboxPriority/lowest`` (0) to
  /// ``AppGroupMailboxPriority/highest`` (9); ``AppGroupMailboxPriority/default`` (5) for a
  /// name without a level (every name written before levels). Nil for a quarantined file.
  public var priority: Int?

  /// Creates an entry.
  public init(
    id: UUID?, state: State, enqueuedAt: Date?, size: Int, deliveryCount: Int?,
    fileName: String, leaseExpiresAt: Date? = nil, quarantinedAt: Date? = nil,
    quarantineReason: String? = nil, dueAt: Date? = nil, priority: Int? = nil
  ) {
    self.priority = priority
    self.id = id
    self.state = state
    self.enqueuedAt = enqueuedAt
    self.size = size
    self.deliveryCount = deliveryCount
    self.fileName = fileName
    self.leaseExpiresAt = leaseExpiresAt
    self.dueAt = dueAt
    self.quarantinedAt = quarantinedAt
    self.quarantineReason = quarantineReason
  }
}

/// One file's entry plus what its envelope header says (see docs/FORMAT.md).
public struct AppGroupMailboxEnvelope: Sendable, Equatable, Hashable {
  /// The entry as listed.
  public var entry: AppGroupMailboxEntry
  /// The header's format number; nil when the file is not a readable envelope (a hostile,
  /// oversized or malformed file, typically in quarantine).
  public var format: Int?
  /// The header's `enqueuedAt`; nil when unreadable.
  public var enqueuedAt: Date?
  /// The header's message type (empty for untyped); nil when unreadable.
  public var messageType: String?
  /// The size in bytes of the encoded message after the header; nil when unreadable.
  public var messageBytes: Int?
  /// The version of the message's encoded form (``AppGroupMailboxVersionedMessage``; the
  /// header's `payloadVersion`, 1 when the header has none; see docs/FORMAT.md, "Payload
  /// versions"); nil when unreadable (a Linux addition).
  public var payloadVersion: Int?
  /// The key of a keyed enqueue (``AppGroupRawMailbox/enqueue(_:key:onConflict:messageType:payloadVersion:priority:)``;
  /// docs/FORMAT.md, "Keys"); nil for a message enqueued without one, or when unreadable (a
  /// Linux addition).
  public var key: String?
  /// The encoded message itself, only when asked for and readable.
  public var message: Data?
  /// Why the file is not a readable envelope; nil when it is (a Linux addition). One of
  /// `"unsafe"` (not a regular file, or it cannot be opened without following a link or
  /// blocking), `"linked"` (a regular file with more than one hard link), `"oversized"`
  /// (larger than the mailbox's largest payload limit), `"malformed"` (empty, no header line,
  /// a header that does not decode, or an id that is not the name's), `"future"` (an envelope
  /// format newer than this build reads) or `"vanished"` (removed or replaced while it was
  /// read). The first five are what a consumer would quarantine it for (a linked file as
  /// `unsafe`); see docs/FORMAT.md.
  public var unreadableReason: String?

  /// Creates an envelope description.
  public init(
    entry: AppGroupMailboxEntry, format: Int?, enqueuedAt: Date?, messageType: String?,
    messageBytes: Int?, message: Data?
  ) {
    self.entry = entry
    self.format = format
    self.enqueuedAt = enqueuedAt
    self.messageType = messageType
    self.messageBytes = messageBytes
    self.message = message
  }
}

/// What ``AppGroupMailboxInspector/requeueQuarantined(_:)`` did.
public enum AppGroupMailboxRequeueOutcome: Sendable, Equatable, Hashable {
  /// The file went back to pending with this id, at the position of its `enqueuedAt`, with its
  /// delivery count reset to 0.
  case requeued(UUID)
  /// A message with this id is already pending, delayed or claimed; the file stays in
  /// quarantine.
  case alreadyPresent(UUID)
  /// The message with this id is past its lifetime (its enqueue date is
  /// ``AppGroupMailboxLimits/messageLifetime`` or more ago): pending again, it would be deleted
  /// as expired at the next claim. The file stays in quarantine: raise the lifetime first, or
  /// purge it.
  case expired(UUID)
  /// No quarantined file has that name.
  case notFound
  /// The file is not a readable message envelope (hostile, oversized, malformed or a future
  /// format), or its message is not one JSON value (which every consumer would quarantine
  /// again); it stays in quarantine. Purge it instead.
  case notAMessage
}

/// Read-only views and repairs of one mailbox namespace, for status displays and operators
/// (`mailboxctl status`, `list`, `show`, `quarantine`).
///
/// Obtain one from ``AppGroupMailbox/inspector`` or ``AppGroupRawMailbox/inspector``. Every
/// member may be called from any thread and process, beside live producers and consumers:
/// listings are snapshots, and an entry that vanishes while it is listed is skipped. Nothing here
/// reads a message except ``envelope(_:includeMessage:)``, which opens one file without
/// following links and reads at most the payload limit.
public struct AppGroupMailboxInspector: Sendable {
  let spool: Spool

  /// Counts and ages of the namespace. Taken while other processes claim and release: each
  /// message counts once, in the state it was seen in last (pending is listed again after
  /// claimed and delayed, the order every single move follows), so the depth never exceeds the
  /// messages there are; a message that moves twice while it is listed may be missed.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``;
  ///   ``AppGroupMailboxError/mailboxDirectoryRemoved`` when the namespace directory or one of
  ///   its areas was deleted.
  /// - Complexity: one listing of each area (two of pending) and one fstatat(2) per entry, O(n),
  ///   with a dictionary entry per message.
  public func status() throws -> AppGroupMailboxStatus {
    try statusWithPriorities().status
  }

  /// The entries in `states`: pending, then claimed, each in claim order (the highest priority
  /// level first, oldest first within a level), then delayed by due time, then
  /// quarantined by quarantine time. A message is listed once, in the state it was seen in
  /// last, as ``status()`` counts it.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``;
  ///   ``AppGroupMailboxError/mailboxDirectoryRemoved`` when the namespace directory or one of
  ///   its areas was deleted.
  /// - Complexity: O(n log n) in the listed entries, one fstatat(2) each.
  public func entries(
    in states: Set<AppGroupMailboxEntry.State> = Set(AppGroupMailboxEntry.State.allCases)
  ) throws -> [AppGroupMailboxEntry] {
    try spool.removalReported { try mapIO("list") { try spool.inspectEntries(states) } }
  }

  /// The envelope of the file named by `selector`: a message id (any case; the first match in
  /// pending, claimed, delayed, then quarantine) or a file name in one of those areas. Nil when
  /// nothing matches.
  /// - Parameter includeMessage: Also return the encoded message bytes.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``.
  /// - Complexity: O(n) in the entries (one listing per area), plus one capped read.
  public func envelope(_ selector: String, includeMessage: Bool = false) throws
    -> AppGroupMailboxEnvelope?
  {
    try mapIO("show") { try spool.inspectEnvelope(selector, includeMessage: includeMessage) }
  }

  /// Moves the quarantined file `fileName` back to pending, keeping its id, `enqueuedAt` and
  /// type, with a fresh insertion sequence, its delivery count reset to 0 and the default
  /// priority level (``AppGroupMailboxPriority/default``: a quarantine name keeps no level), under the same
  /// lock and depth bound as an enqueue. A message past its lifetime stays in quarantine
  /// (``AppGroupMailboxRequeueOutcome/expired(_:)``): the next claim would delete it.
  /// - Throws: ``AppGroupMailboxError/mailboxFull`` when the mailbox holds `maxMessages`
  ///   whatever the overflow policy (a requeue never deletes a pending message to make room;
  ///   the file stays in quarantine); ``AppGroupMailboxError/ioFailure(_:)``.
  /// A message with the same id that is pending, delayed or claimed keeps the file in
  /// quarantine (``AppGroupMailboxRequeueOutcome/alreadyPresent(_:)``).
  /// - Complexity: O(n) in the entries of pending, delayed and claimed (the duplicate check).
  public func requeueQuarantined(_ fileName: String) throws -> AppGroupMailboxRequeueOutcome {
    try spool.requeueQuarantined(fileName)
  }

  /// Deletes the quarantined file `fileName` (a directory is removed without following links).
  /// A file whose name is not valid UTF-8 is named as ``entries(in:)`` lists it, with U+FFFD in
  /// place of its invalid bytes: a `fileName` with U+FFFD deletes the file of exactly that name
  /// and every such file it stands for. Returns false when there is no such file.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``: the first file of that name that could
  ///   not be deleted (chattr(1) `+i`, a directory it may not change), after every other was.
  public func purgeQuarantined(_ fileName: String) throws -> Bool {
    try spool.purgeQuarantined(fileName)
  }
}

extension AppGroupMailbox {
  /// Counts, listings and quarantine repairs of this namespace; see
  /// ``AppGroupMailboxInspector``.
  public var inspector: AppGroupMailboxInspector { AppGroupMailboxInspector(spool: spool) }
}

extension AppGroupRawMailbox {
  /// Counts, listings and quarantine repairs of this namespace; see
  /// ``AppGroupMailboxInspector``.
  public var inspector: AppGroupMailboxInspector { AppGroupMailboxInspector(spool: spool) }
}
