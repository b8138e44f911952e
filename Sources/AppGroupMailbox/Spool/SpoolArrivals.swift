import Glibc
import MailboxLocks

/// What arrived in `delayed/` and in the namespace directory since a spool's previous claim, from
/// the process's shared inotify instance, so that a claim skips the fstat(2) of `delayed/`
/// (``DelayedScan``) and the fstatat(2) of `settings` (the hold) while nothing arrived in them.
///
/// Every way something enters `delayed/` (an enqueue with a not-before time, a release with a
/// retry delay: renames; an outside `ln`: a link) and every way `settings` is written (renamed
/// over, or created by rename or link; docs/FORMAT.md, "The settings file") queues `IN_MOVED_TO`
/// or `IN_CREATE` before its system call returns, so one read of the shared descriptor at the
/// start of a claim sees everything that arrived before the claim began. Departures need no
/// event: a message leaving `delayed/` cannot make another due sooner.
///
/// Each directory is watched through an ``InotifyFeedSubscription`` (on the first claim; the
/// same watch a mailbox watcher of that directory uses, so a waiting consumer adds none). When
/// a feed cannot be trusted (just subscribed, events lost, inotify unavailable) the answer is
/// ``Change/unknown`` and the claim looks with its system call as before.
///
/// A take consumes what its read routed, so every other claim of the spool must still learn of
/// it: each take that reports `settings` arrived (or unknown) counts a settings generation, and
/// later takes report `settings` arrived until a refresh covering that generation succeeded
/// (``settingsRefreshed(through:)``): a claim that runs while another re-reads `settings`, or
/// after a re-read failed (`EMFILE`, `EIO`), re-reads it too. Likewise each take that reports
/// something arrived in `delayed/` (or unknown) counts a delayed generation
/// (``delayedGeneration``), which a listing records (``DelayedScan/generation``) and a claim
/// told "nothing arrived" compares, so a listing that began before another claim took an
/// arrival never stands in for that arrival.
///
/// The namespace feed also reports departures (`IN_DELETE`, `IN_MOVED_FROM`): an area that left
/// the namespace directory (a recursive removal deletes the areas first) makes
/// ``removalSuspected(_:)`` look, so a claim that finds nothing learns of a deleted mailbox
/// without a system call while nothing left. (The area's own watch says nothing: the spool's
/// open descriptor keeps the deleted directory's inode, so `IN_DELETE_SELF` never comes.)
///
/// Thread safety: every member may be called from any thread (one lock).
final class SpoolArrivals: Sendable {
  /// What arrived in one directory since the previous take.
  enum Change: Equatable, Sendable {
    /// Nothing: the feed is trusted and holds no arrival (of `settings`, for the namespace).
    case none
    /// Something arrived.
    case some
    /// The feed cannot say (see ``SpoolArrivals``): look.
    case unknown
  }

  private struct State: ~Copyable {
    var delayed: InotifyFeedSubscription
    var namespace: InotifyFeedSubscription
    var records: [UInt8] = []
    /// Takes that reported something arrived in (or unknown for) `delayed/`.
    var delayedGeneration: UInt64 = 0
    /// Takes that reported `settings` arrived (or unknown), and the most of them a successful
    /// refresh covered.
    var settingsGeneration: UInt64 = 0
    var settingsApplied: UInt64 = 0
    /// Set when an area may have left the namespace directory (or the feed cannot say);
    /// cleared by ``removalSuspected(_:)`` once a look found the areas in place.
    var areaMayHaveLeft = true
  }

  private let state: Locked<State>

  /// Feeds subscribed on the first take; `watching` false never uses inotify (every take says
  /// ``Change/unknown``).
  init(watching: Bool = true) {
    state = Locked(
      State(
        delayed: InotifyFeedSubscription(watching: watching),
        namespace: InotifyFeedSubscription(watching: watching)))
  }

  /// What one ``take(delayed:namespace:)`` says.
  struct Taken: Sendable {
    /// What arrived in `delayed/`.
    var delayed: Change
    /// ``SpoolArrivals/delayedGeneration`` as this take left it, for the listing that follows.
    var delayedGeneration: UInt64
    /// Whether `settings` must be re-read: it arrived, the feed cannot say, or an earlier take's
    /// arrival has not been covered by a successful refresh yet.
    var settings: Change
    /// The settings generation to pass to ``settingsRefreshed(through:)`` after a successful
    /// refresh.
    var settingsGeneration: UInt64
    /// Whether the shared instance was read (see ``take(delayed:namespace:)``).
    var didRead: Bool
  }

  /// Reads the shared instance once (when either feed is watching), then says what arrived in
  /// `delayed/` (descriptor `delayed`) and whether `settings` must be re-read (descriptor
  /// `namespace`: its directory). `didRead` is whether that read happened: when it did, every
  /// event queued before this call began has been routed to every feed of the process,
  /// including the pending index's.
  /// - Complexity: O(e) in the events read.
  func take(delayed: Int32, namespace: Int32) -> Taken {
    state.withLock { state in
      let readsDelayed = state.delayed.watch != nil
      let delayedStatus = state.delayed.take(
        delayed, mask: Self.mask, reading: true, into: &state.records)
      let delayedChange = Self.change(delayedStatus, records: state.records, named: nil)
      let readsNamespace = !readsDelayed && state.namespace.watch != nil
      let namespaceStatus = state.namespace.take(
        namespace, mask: Self.namespaceMask, reading: !readsDelayed, into: &state.records)
      var settingsChange = Self.change(
        namespaceStatus, records: state.records, named: Self.settingsName)
      if Self.areaNames.contains(where: {
        Self.change(namespaceStatus, records: state.records, named: $0) != .none
      }) {
        state.areaMayHaveLeft = true
      }
      state.records.removeAll(keepingCapacity: state.records.capacity <= 4096)
      if delayedChange != .none { state.delayedGeneration &+= 1 }
      if settingsChange != .none {
        state.settingsGeneration &+= 1
      } else if state.settingsApplied != state.settingsGeneration {
        settingsChange = .some  // another claim took it and has not (or could not) read it
      }
      return Taken(
        delayed: delayedChange, delayedGeneration: state.delayedGeneration,
        settings: settingsChange,
        settingsGeneration: state.settingsGeneration, didRead: readsDelayed || readsNamespace)
    }
  }

  /// Whether the caller should treat the mailbox as deleted: when an area may have left the
  /// namespace directory since the last look (or the feed cannot say), `isRemoved` looks (the
  /// fstat(2) of each directory, ``SpoolDirectories/isRemoved``); otherwise false without a
  /// system call. A look that finds the areas in place clears the suspicion.
  func removalSuspected(_ isRemoved: () -> Bool) -> Bool {
    state.withLock { state in
      guard state.areaMayHaveLeft else { return false }
      let removed = isRemoved()
      if !removed { state.areaMayHaveLeft = false }
      return removed
    }
  }

  /// Records that `settings` was re-read successfully after the take that returned
  /// `generation`: takes no longer report it arrived for that generation or earlier ones.
  func settingsRefreshed(through generation: UInt64) {
    state.withLock { state in
      if generation &- state.settingsApplied < UInt64.max / 2 { state.settingsApplied = generation }
    }
  }

  /// How many takes reported something arrived in `delayed/` (or could not say): read before a
  /// listing, recorded with it (``DelayedScan/generation``).
  var delayedGeneration: UInt64 { state.withLock { $0.delayedGeneration } }

  /// The events both feeds subscribe to: every way a name enters a directory.
  static let mask = InotifyMask.arrivals | InotifyMask.bits(IN_ONLYDIR)
  /// The namespace directory's: arrivals (of `settings`) and departures (of an area).
  static let namespaceMask = mask | InotifyMask.departures
  private static let settingsName = Array(Spool.settingsName.utf8)
  private static let areaNames = SpoolArea.allCases.map(\.nameBytes)

  /// `status` and `records` (a length byte, then the name, each) as a change; with `named`,
  /// only an arrival of that name counts.
  private static func change(_ status: InotifyFeedStatus, records: [UInt8], named: [UInt8]?)
    -> Change
  {
    guard status == .trusted else { return .unknown }
    guard let named else { return records.isEmpty ? .none : .some }
    var offset = 0
    while offset < records.count {
      let start = offset + 1
      let end = min(start + Int(records[offset]), records.count)
      if records[start..<end].elementsEqual(named) { return .some }
      offset = end
    }
    return .none
  }
}
