import Foundation
import Glibc
import MailboxLocks

/// The lifecycle events of one namespace, as an `AsyncSequence`: every enqueue, claim,
/// acknowledge, release and so on, by any process, in the order the changes happened (see
/// ``AppGroupMailboxEvent`` and docs/WAKEUPS.md, "Lifecycle events", for what is derived how).
///
/// Obtain one from ``AppGroupMailboxInspector/events()``. Its watches are armed when that
/// returns: every change after it is seen, none before. Iterate it once, from one task (a
/// second iteration after the first ended finishes at once; two at the same time trap, as for
/// `AsyncThrowingStream`). The sequence ends when the iterating task is cancelled, the iterator is
/// dropped, or ``close()`` is called; it throws ``AppGroupMailboxError/mailboxDirectoryRemoved``
/// when an area's directory is deleted, moved, replaced or unmounted (within 10 seconds when a
/// directory above them, such as the container, is renamed, which sends no inotify event). A
/// queue overflow is an event (``AppGroupMailboxEvent/Kind/overflowed``), never silent. Events
/// wait in memory until they are taken, up to a bound
/// (``AppGroupMailboxInspector/events(bufferLimit:)``): when a slow
/// iteration lets the buffer fill, its last slot holds an ``AppGroupMailboxEvent/Kind/overflowed``
/// event (put there when an event takes the slot before it, so before anything is dropped) and
/// later events are dropped until the iteration takes some, so a gap is reported where it would
/// be and memory stays bounded.
///
/// It uses the process's one shared inotify instance (docs/WAKEUPS.md, "Resources"), and 5
/// watches (`pending/`, `claimed/`, `delayed/`, `quarantine/` and the namespace directory)
/// until it ends. Thread safety:
/// ``close()`` may be called from any thread.
public final class AppGroupMailboxEvents: AsyncSequence, Sendable {
  /// One lifecycle event.
  public typealias Element = AppGroupMailboxEvent
  /// The iterator: `next()` waits for the next event, returns nil once the sequence ended, and
  /// throws ``AppGroupMailboxError/mailboxDirectoryRemoved``.
  public typealias AsyncIterator = AsyncThrowingStream<AppGroupMailboxEvent, any Error>.Iterator

  private struct State {
    var instance: InotifyInstance?
    var areas: [Int32: EventArea] = [:]
    /// The watch on the namespace directory, which sees an area deleted, moved or replaced
    /// (the open descriptors of the areas delay their own `IN_DELETE_SELF`).
    var namespaceWatch: Int32 = -1
    var watches: [InotifyWatch] = []
    var derivation: EventDerivation
    var iterated = false
    /// The timer of the place checks (see
    /// ``init(directories:lifetime:bufferLimit:placeCheckInterval:)``).
    var placeTimer: RepeatingTimer?
  }

  private let stream: AsyncThrowingStream<AppGroupMailboxEvent, any Error>
  private let continuation: AsyncThrowingStream<AppGroupMailboxEvent, any Error>.Continuation
  private let state: Locked<State>

  /// Watches `directories` (the 4 message areas and the namespace) on the shared inotify
  /// instance, and every `placeCheckInterval` seconds checks that they are still the
  /// directories their paths name (a renamed container sends no inotify event to the watches
  /// inside it; ``WatcherCore/placeCheckInterval``).
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)`` (operation `"events"`) when inotify is
  ///   unavailable (`EMFILE`, `ENOSPC` at the instance or watch limits).
  init(
    directories: SpoolDirectories, lifetime: TimeInterval, bufferLimit: Int,
    placeCheckInterval: TimeInterval = WatcherCore.placeCheckInterval
  ) throws {
    (stream, continuation) = AsyncThrowingStream.makeStream(
      bufferingPolicy: .bufferingOldest(bufferLimit))
    let state = Locked(State(derivation: EventDerivation(lifetimeMicros: Int64(lifetime * 1e6))))
    self.state = state
    let areas: [(Int32, EventArea)] = [
      (directories.pending, .pending), (directories.claimed, .claimed),
      (directories.delayed, .delayed), (directories.quarantine, .quarantine),
    ]
    let mask =
      InotifyMask.bits(IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE) | InotifyMask.watchLost
      | InotifyMask.options
    let continuation = self.continuation
    try mapIO("events") {
      let instance = try InotifyHub.acquire()
      do {
        // Under the state lock: the handler waits until the watch-to-area table is filled.
        try state.withLock { current in
          current.instance = instance
          let watches = try instance.add(
            paths: areas.map { Syscall.procPath($0.0) } + [Syscall.procPath(directories.namespace)],
            mask: mask
          ) { batch in Self.handle(batch, state, continuation) }
          current.watches = watches
          for (watch, area) in zip(watches, areas) { current.areas[watch.watch] = area.1 }
          current.namespaceWatch = watches.last?.watch ?? -1
        }
      } catch {
        state.withLock { $0.instance = nil }
        InotifyHub.release(instance)
        throw error
      }
    }
    let timer = RepeatingTimer(
      every: placeCheckInterval, leeway: .milliseconds(Int(placeCheckInterval * 100)),
      on: Self.placeQueue
    ) { [continuation] in
      guard !directories.isInPlace(areas: Self.watchedAreas) else { return }
      continuation.finish(throwing: AppGroupMailboxError.mailboxDirectoryRemoved)
    }
    state.withLock { $0.placeTimer = timer }
    continuation.onTermination = { _ in Self.stop(state) }
  }

  private static let placeQueue = DispatchQueue(label: "AppGroupMailbox.events.place")

  deinit {
    // Never iterated: nothing else would end the watches.
    if !state.withLock({ $0.iterated }) { close() }
  }

  /// The iterator of the one iteration this sequence allows.
  public func makeAsyncIterator() -> AsyncIterator {
    state.withLock { $0.iterated = true }
    return stream.makeAsyncIterator()
  }

  /// Ends the sequence: its iteration returns nil after the events already read, and the
  /// watches are removed. Idempotent.
  public func close() {
    continuation.finish()
  }

  /// On the inotify reader thread: derive, then hand out outside the lock (finishing runs
  /// ``stop(_:)``, which takes the lock).
  private static func handle(
    _ batch: [InotifyEvent], _ state: Locked<State>,
    _ continuation: AsyncThrowingStream<AppGroupMailboxEvent, any Error>.Continuation
  ) {
    let now = MailboxClock.system.nowMicros()
    let (events, lost) = state.withLock { state -> ([AppGroupMailboxEvent], Bool) in
      var lost = false
      var located: [(EventArea?, InotifyEvent)] = []
      for event in batch {
        if event.watch == -1 {
          located.append((nil, event))
        } else if event.watch == state.namespaceWatch {
          let area = event.name.map(Self.areaNames.contains) ?? false
          if area && event.mask & InotifyMask.areaChanges != 0 { lost = true }
          if event.name == nil && event.mask & InotifyMask.watchLost != 0 { lost = true }
        } else if let area = state.areas[event.watch] {
          if event.name == nil && event.mask & InotifyMask.watchLost != 0 { lost = true }
          located.append((area, event))
        }
      }
      return (state.derivation.derive(located, now: now), lost)
    }
    deliver(events, to: continuation)
    if lost { continuation.finish(throwing: AppGroupMailboxError.mailboxDirectoryRemoved) }
  }

  /// Yields `events` into a buffer bounded with `.bufferingOldest`, keeping its last free slot
  /// for an ``AppGroupMailboxEvent/Kind/overflowed`` marker: once an event leaves one slot, the
  /// marker takes it, and the events after it are dropped until the iteration has taken some.
  /// Called from one thread at a time (the inotify reader thread).
  static func deliver(
    _ events: [AppGroupMailboxEvent],
    to continuation: AsyncThrowingStream<AppGroupMailboxEvent, any Error>.Continuation
  ) {
    for event in events {
      guard case .enqueued(let remaining) = continuation.yield(event) else { continue }
      if remaining == 1, event.kind != .overflowed {
        continuation.yield(AppGroupMailboxEvent(kind: .overflowed, id: nil, date: event.date))
      }
    }
  }

  /// The watched areas of the namespace directory, and their names.
  private static let watchedAreas: [SpoolArea] = [.pending, .claimed, .delayed, .quarantine]
  private static let areaNames = Set(watchedAreas.map(\.name))

  /// Removes the watches and leaves the shared instance, once.
  private static func stop(_ state: Locked<State>) {
    let (instance, watches, timer) = state.withLock { state in
      defer {
        state.instance = nil
        state.watches = []
        state.placeTimer = nil
      }
      return (state.instance, state.watches, state.placeTimer)
    }
    timer?.cancel()
    guard let instance else { return }
    for watch in watches { instance.remove(watch) }
    InotifyHub.release(instance)
  }
}

extension AppGroupMailboxInspector {
  /// The lifecycle events of this namespace from now on, by every process; see
  /// ``AppGroupMailboxEvents``. The message lifetime that tells an expiry from a removal is the
  /// one stored in the mailbox's settings when this is called.
  /// - Parameter bufferLimit: The most events that wait for the iteration (at least 2, default
  ///   10,000, a few hundred bytes each), the marker's slot included: once `bufferLimit - 1`
  ///   wait, an ``AppGroupMailboxEvent/Kind/overflowed`` event takes the last slot and later
  ///   events are dropped until the iteration takes some (see ``AppGroupMailboxEvents``).
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"bufferLimit"`) below 2;
  ///   ``AppGroupMailboxError/ioFailure(_:)`` (operation `"events"`) when inotify is
  ///   unavailable: events are derived from inotify alone, with no polling fallback.
  public func events(bufferLimit: Int = 10_000) throws -> AppGroupMailboxEvents {
    guard bufferLimit >= 2 else { throw AppGroupMailboxError.invalidLimit("bufferLimit") }
    return try AppGroupMailboxEvents(
      directories: spool.directories, lifetime: spool.settings.messageLifetime,
      bufferLimit: bufferLimit)
  }
}
