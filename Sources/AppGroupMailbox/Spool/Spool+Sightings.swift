import Foundation
import Glibc

extension Spool {
  /// Each message in `states` (of pending, claimed and delayed) once, as it was seen last, for
  /// the inspector's counts and listings while other processes claim and release.
  ///
  /// The areas are listed pending, claimed, delayed, then pending again (when claimed or
  /// delayed is asked for too): every single move (a claim, a release, a release with a delay,
  /// a promotion) goes to an area listed later, as in ``recount(stored:)``, so a message that
  /// moves once while it is listed is still seen, and one seen twice (claimed after it was
  /// listed pending) counts once, in the area it was seen in last. `describe` makes the value of
  /// an entry from its state, its area's descriptor and its name's bytes (valid only during the
  /// call); nil leaves it out (not a message name, or gone before it was looked at). An entry
  /// the listing reports as something other than a regular file (a directory, FIFO or symbolic
  /// link under a message name) is not a message and is left out, as ``recount(stored:)``
  /// leaves it out of the depth.
  /// - Complexity: O(n) in the entries of the areas listed (pending twice), with a dictionary
  ///   entry per message.
  func sightings<Value>(
    _ states: Set<AppGroupMailboxEntry.State>,
    _ describe: (AppGroupMailboxEntry.State, Int32, UnsafeBufferPointer<UInt8>) -> (UUID, Value)?
  ) throws -> [UUID: Value] {
    var seen: [UUID: Value] = [:]
    var areas: [(Int32, AppGroupMailboxEntry.State)] = []
    if states.contains(.pending) { areas.append((directories.pending, .pending)) }
    if states.contains(.claimed) { areas.append((directories.claimed, .claimed)) }
    if states.contains(.delayed) { areas.append((directories.delayed, .delayed)) }
    if states.contains(.pending), areas.count > 1 {
      areas.append((directories.pending, .pending))
    }
    for (area, state) in areas {
      // One name at a time: a listing at depth 100,000 holds no array of strings.
      try Syscall.forEachEntry(area) { bytes, type in
        guard !DirectoryEntry.isKnownNotRegular(type) else { return }
        if let (id, value) = describe(state, area, bytes) { seen[id] = value }
      }
    }
    return seen
  }

  /// ``sightings(_:_:)`` for a `describe` that needs the name as a string and its lstat(2)
  /// description (one fstatat(2) per entry); an entry gone before it was looked at, or not a
  /// regular file (where the listing could not tell), is left out.
  func statSightings<Value>(
    _ states: Set<AppGroupMailboxEntry.State>,
    _ describe: (AppGroupMailboxEntry.State, String, stat) -> (UUID, Value)?
  ) throws -> [UUID: Value] {
    try sightings(states) { state, area, bytes in
      Self.lstatEntry(area, bytes).flatMap {
        $0.1.st_mode & S_IFMT == S_IFREG ? describe(state, $0.0, $0.1) : nil
      }
    }
  }

  /// See ``AppGroupMailboxInspector/messageSummaries()``: names alone, nothing opened or
  /// stat'ed.
  func inspectSummaries() throws -> [AppGroupMailboxInspector.MessageSummary] {
    let seen = try sightings([.pending, .claimed, .delayed]) {
      state, _, bytes -> (UUID, AppGroupMailboxInspector.MessageSummary)? in
      Self.message(state, bytes).map {
        (
          $0.id,
          .init(
            state: state, enqueuedMicros: $0.key.micros, deliveryCount: $0.attempts,
            priority: $0.key.level)
        )
      }
    }
    return Array(seen.values)
  }

  /// The message a name in `state`'s area describes (a pending name, or the one a claimed or
  /// delayed name holds); nil for any other name. Pending names are parsed from the listing's
  /// bytes (the area at depth), the others from a string.
  private static func message(
    _ state: AppGroupMailboxEntry.State, _ bytes: UnsafeBufferPointer<UInt8>
  )
    -> PendingName?
  {
    switch state {
    case .pending: PendingName(bytes: bytes)
    case .claimed: ClaimedName(parsing: String(decoding: bytes, as: UTF8.self))?.message
    default: DelayedName(parsing: String(decoding: bytes, as: UTF8.self))?.message
    }
  }

  /// See ``AppGroupMailboxInspector/counts()``: each message's state and level alone (18 bytes
  /// a dictionary value and key, not a summary's 56).
  func inspectCounts() throws -> AppGroupMailboxCounts {
    let seen = try sightings([.pending, .claimed, .delayed]) {
      state, _, bytes -> (UUID, (AppGroupMailboxEntry.State, UInt8))? in
      Self.message(state, bytes).map { ($0.id, (state, UInt8(truncatingIfNeeded: $0.key.level))) }
    }
    var counts = AppGroupMailboxCounts(pending: 0, claimed: 0, delayed: 0, quarantined: 0)
    for (state, level) in seen.values {
      switch state {
      case .pending:
        counts.pending += 1
        counts.pendingByPriority[Int(level), default: 0] += 1
      case .claimed: counts.claimed += 1
      default: counts.delayed += 1
      }
    }
    try Syscall.forEachEntry(directories.quarantine) { _, _ in counts.quarantined += 1 }
    return counts
  }
}
