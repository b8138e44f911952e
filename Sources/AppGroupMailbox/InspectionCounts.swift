package import Foundation

/// How many messages a namespace holds in each state, from the names of its files alone.
///
/// A snapshot taken as ``AppGroupMailboxInspector/status()`` takes its counts (each message
/// once, in the state it was seen in last), without the sizes and ages that need a system call
/// per file.
public struct AppGroupMailboxCounts: Sendable, Equatable, Hashable, Codable {
  /// Messages waiting to be claimed (valid message names in `pending/`).
  public var pending: Int
  /// Messages held by a consumer (valid claim names in `claimed/`).
  public var claimed: Int
  /// Messages not due yet (valid names in `delayed/`).
  public var delayed: Int
  /// Entries in `quarantine/`.
  public var quarantined: Int
  /// The pending messages of each priority level that has any
  /// (``AppGroupMailboxPriority/levels``; a level with none is absent).
  public var pendingByPriority: [Int: Int]

  /// What counts toward ``AppGroupMailboxLimits/maxMessages``: pending plus delayed plus
  /// claimed.
  public var depth: Int { pending + delayed + claimed }

  /// Creates a counts value.
  public init(
    pending: Int, claimed: Int, delayed: Int, quarantined: Int,
    pendingByPriority: [Int: Int] = [:]
  ) {
    self.pending = pending
    self.claimed = claimed
    self.delayed = delayed
    self.quarantined = quarantined
    self.pendingByPriority = pendingByPriority
  }
}

extension AppGroupMailboxInspector {
  /// The counts of ``status()``, from the names alone: one listing of each area (two of
  /// pending) and nothing opened or stat'ed, so it suits a display refreshed on every wake-up
  /// (`mailboxctl watch`) at depth. Same snapshot rules as ``status()``: each message counts
  /// once, in the state it was seen in last; a message that moves twice while it is listed may
  /// be missed. Safe from any thread and process.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)``;
  ///   ``AppGroupMailboxError/mailboxDirectoryRemoved`` when the namespace directory or one of
  ///   the areas it lists (`pending/`, `claimed/`, `delayed/`, `quarantine/`) was deleted.
  /// - Complexity: O(n) in the entries, with about 70 bytes a message while it runs (a
  ///   dictionary entry of its id, state and level: 7 MB at depth 100,000, `mailboxctl
  ///   namespaces`).
  public func counts() throws -> AppGroupMailboxCounts {
    try spool.removalReported { try mapIO("status") { try spool.inspectCounts() } }
  }

  /// ``status()`` and ``AppGroupMailboxCounts/pendingByPriority`` taken together, from one
  /// look at each message (`mailboxctl status`): same snapshot rules, throws and complexity as
  /// ``status()``.
  package func statusWithPriorities() throws -> (
    status: AppGroupMailboxStatus, pendingByPriority: [Int: Int]
  ) {
    try spool.removalReported { try mapIO("status") { try spool.inspectStatus() } }
  }

  /// One message as its file name describes it, for `mailboxctl status --prometheus` and
  /// `--ages`: what they need of every message without an ``AppGroupMailboxEntry`` (and its
  /// strings) each.
  package struct MessageSummary: Sendable {
    /// Pending, claimed or delayed.
    package var state: AppGroupMailboxEntry.State
    /// Its place in line in microseconds since 1970 (``AppGroupMailboxEntry/enqueuedAt``).
    package var enqueuedMicros: Int64
    /// Deliveries so far (``AppGroupMailboxEntry/deliveryCount``).
    package var deliveryCount: Int
    /// Its priority level (``AppGroupMailboxEntry/priority``).
    package var priority: Int

    /// ``enqueuedMicros`` as a date.
    package var enqueuedAt: Date { Date(mailboxMicros: enqueuedMicros) }
  }

  /// Every pending, claimed and delayed message once, as ``counts()`` counts them (same
  /// snapshot rules, names alone), in no particular order.
  /// - Throws: as ``counts()``.
  /// - Complexity: O(n) in the entries; at most about 250 bytes a message while it runs (the
  ///   peak of `mailboxctl status --prometheus` at depth 100,000 is 25 MB above an empty
  ///   mailbox's, its status included).
  package func messageSummaries() throws -> [MessageSummary] {
    try spool.removalReported { try mapIO("status") { try spool.inspectSummaries() } }
  }
}
