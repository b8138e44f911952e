import Foundation
import Glibc
import MailboxLocks

/// The pending names of one spool, kept in memory between claims so a claim at depth n costs
/// O(log n) instead of a listing and sort of `pending/` (O(n log n)).
///
/// How it stays FIFO-correct across processes: before its first use the index subscribes to
/// `pending/` (IN_MOVED_TO | IN_CREATE) on the process's one inotify instance (``InotifyHub``),
/// *then* lists it (watch first, then scan, so nothing arriving in between is missed). Every way
/// a message enters `pending/` — an enqueue (single or batch) or import by any process (rename),
/// a release, a claim put back, a recovered claim (rename back under the original name, so the
/// original position), a promotion from `delayed/` (rename), an outside `mv` (rename) or `ln`
/// (link) — queues an event in the kernel before that system call returns. Each claim call
/// first reads the shared descriptor without blocking (once, for ``SpoolArrivals`` and this
/// index alike; again only after it promoted messages itself), under the lock its reader thread
/// also reads it under, and routes what it read to every subscriber
/// (``InotifyInstance/take(_:reading:into:)``); then it takes this index's names, which include those the reader thread or another mailbox's
/// claim read before, so it sees every event queued before it began. It pushes each named
/// message into a min-heap ordered by ``MessageKey`` (priority level, highest first, then
/// enqueuedAt and sequence), so an import with an older date, a release or a recovery goes ahead
/// of newer messages exactly as a fresh sorted listing would order them. Names are hints: a name
/// another consumer already claimed fails its rename with ENOENT and is skipped, duplicates are
/// harmless, and the file itself is checked as before (lstat, links, expiry, dead letters: see
/// ``Spool/claim``). A name the claim takes but leaves in `pending/` (a young hard link, an
/// entry a failed quarantine could not move) is pushed back with ``push(_:)``.
///
/// A reported name that is not a message name (or not valid UTF-8) makes the same refresh list
/// `pending/`, whose foreign entries (with their exact bytes) the claim then quarantines.
///
/// The index falls back to a full listing when it cannot be trusted: on `IN_Q_OVERFLOW` (the
/// shared queue overflowed: every index relists), when the directory was moved or unmounted,
/// when its names waited past ``InotifyRouting/Feed/limit``, after a claim failed midway, and
/// after 32 consecutive stale names (another process consumed what this one knew of:
/// relisting is cheaper than failing renames). When the watch is removed (`IN_IGNORED`:
/// directory deleted or unmounted) it subscribes again, then lists. Where inotify is
/// unavailable (`EMFILE`, `ENOSPC`, or no inotify) every claim lists `pending/` as before. The
/// index holds one watch and one share of the process's instance after its first claim, both
/// released when it ends (the watch removed with inotify_rm_watch(2) when no watcher shares
/// it). A debug build's ``FaultInjection`` rules on `inotify_init1` (when the process has no
/// instance yet) and `inotify_add_watch` (a simulated inotify limit) apply here as to the
/// watcher. inotify sees no changes made by other NFS clients (inotify(7)): use local
/// filesystems.
///
/// The index also keeps a typed consumer's ``PassedOverMarks``: every name it takes from the
/// feed is an arrival of its id, and every listing (it could not account for arrivals) leaves
/// every mark for another look, so a new file under a passed-over name (a keyed replacement) is
/// never passed over.
///
/// Memory: one ``PackedName`` (40 bytes) per known pending message, in a ``NameHeap`` whose
/// storage grows in chunks without copying; a listing parses names straight from getdents64(2)'s
/// buffer (``Syscall/forEachEntry(_:_:)``), so building the index allocates nothing per entry.
/// Between claims, names reported by inotify wait in the shared instance (1 byte more than the
/// name each, at most ``InotifyRouting/Feed/limit`` bytes). Never payload bytes.
final class PendingIndex: Sendable {
  private struct State: ~Copyable {
    var feed: InotifyFeedSubscription
    var stale = true
    var misses = 0
    var heap = NameHeap()
    /// The names taken from the feed (kept, with its capacity, between claims).
    var records: [UInt8] = []
    var passedOver = PassedOverMarks()
  }

  private let state: Locked<State>

  /// An empty index; `watching` false never uses inotify (every refresh lists), as when inotify
  /// is unavailable.
  init(watching: Bool = true) {
    state = Locked(State(feed: InotifyFeedSubscription(watching: watching)))
  }
  static let missesBeforeRelisting = 32
  /// The events the index subscribes to: every way a name enters a directory.
  static let mask = InotifyMask.arrivals | InotifyMask.bits(IN_ONLYDIR)

  /// Brings the index up to date with `pending/` (descriptor `pending`) before a claim call.
  /// With `reading` it reads the shared inotify descriptor first; without, the caller read it
  /// since the claim began (``SpoolArrivals/take(delayed:namespace:)``).
  /// `list` lists `pending/`, handing each message name to its argument (in any order) and
  /// returning the entries under any other name (``listing(_:_:)``); it runs only
  /// when the index cannot be trusted, or when inotify reported a name that is not a message
  /// name. Returns the foreign entries of that listing (empty when it did not list), for the
  /// caller to quarantine.
  /// - Complexity: O(e log n) for e queued events; O(n) when it has to list (the names are
  ///   heapified in place, not sorted).
  func refresh(
    pending: Int32, reading: Bool = true,
    list: ((PendingName) -> Void) throws -> [DirectoryEntry]
  ) throws -> [DirectoryEntry] {
    try state.withLock { state in
      Self.takeArrivals(pending, reading: reading, &state)
      guard state.stale || state.misses >= Self.missesBeforeRelisting
      else { return [] }
      state.heap.removeAll()
      state.passedOver.unconfirmAll()  // arrivals went unseen: look at every mark again
      let foreign: [DirectoryEntry]
      do {
        foreign = try list { state.heap.append($0) }
      } catch {
        state.heap.removeAll()
        throw error
      }
      state.heap.heapify()
      state.stale = false
      state.misses = 0
      return foreign
    }
  }

  /// Takes the names the feed holds into the heap (each an arrival for ``PassedOverMarks``),
  /// or marks the index stale when they cannot be trusted (not watching yet, lost events, or
  /// inotify unavailable: a listing follows).
  private static func takeArrivals(_ pending: Int32, reading: Bool, _ state: inout State) {
    switch state.feed.take(pending, mask: mask, reading: reading, into: &state.records) {
    case .trusted:
      // A foreign name (or one that is not valid UTF-8) is handled from a listing, which
      // gives its exact bytes.
      if !state.stale, !push(state.records, into: &state.heap, marks: &state.passedOver) {
        state.stale = true
      }
    case .untrusted, .lost:
      state.stale = true
    }
  }

  /// Lists `pending` for ``refresh(pending:reading:list:)``: hands each message name to `add` and
  /// returns the entries under other names. Parses each name from the listing's buffer, so a
  /// message costs no allocation. - Complexity: O(n) in the entries.
  static func listing(_ pending: Int32, _ add: (PendingName) -> Void) throws -> [DirectoryEntry] {
    var foreign: [DirectoryEntry] = []
    try Syscall.forEachEntry(pending) { name, type in
      if let parsed = PendingName(bytes: name) {
        add(parsed)
      } else {
        foreign.append(DirectoryEntry(bytes: name, type: type))
      }
    }
    return foreign
  }

  /// Puts names back that a claim call took with ``next()`` but left in `pending/`.
  /// - Complexity: O(k log n) for k names.
  func push(_ names: [PendingName]) {
    guard !names.isEmpty else { return }
    state.withLock { state in
      for name in names { state.heap.push(name) }
    }
  }

  /// The oldest known pending message, removed from the index; nil when none is known.
  func next() -> PendingName? {
    state.withLock { $0.heap.pop() }
  }

  /// ``next()`` with the message's passed-over mark if it has one (one lock for both, and no
  /// lookup while the consumer passed nothing over). - Complexity: O(log n).
  func nextWithMark() -> (name: PendingName, mark: PassedOverMarks.Mark?)? {
    state.withLock { state in
      guard let name = state.heap.pop() else { return nil }
      return (name, state.passedOver.isEmpty ? nil : state.passedOver[name.id])
    }
  }

  /// Marks message `id`, whose file `file` a claim read and put back, as passed over
  /// (``PassedOverMarks/mark(_:file:)``).
  func passOver(_ id: UUID, file: FileIdentity) {
    state.withLock { $0.passedOver.mark(id, file: file) }
  }

  /// A look at the name found `mark`'s file still there (``PassedOverMarks/confirm(_:_:)``).
  func confirm(_ id: UUID, _ mark: PassedOverMarks.Mark) {
    state.withLock { $0.passedOver.confirm(id, mark) }
  }

  /// Drops the mark of `id`: the next claim reads the message.
  func forgetPassedOver(_ id: UUID) {
    state.withLock { $0.passedOver.remove(id) }
  }

  /// Drops every mark: the next claim reads every message again.
  func forgetPassedOver() {
    state.withLock { $0.passedOver.removeAll() }
  }

  /// The passed-over marks a wait must look at: those a name with their id arrived for since
  /// they were confirmed (the feed is taken first, as a claim takes it), or every mark while the
  /// index cannot account for arrivals (stale or without inotify). Empty, with no system call,
  /// when the consumer passed nothing over. - Complexity: O(e log n + k) for e queued names and
  /// k marks.
  func passedOverToLookAt(pending: Int32) -> [UUID: PassedOverMarks.Mark] {
    state.withLock { state in
      guard !state.passedOver.isEmpty else { return [:] }
      Self.takeArrivals(pending, reading: true, &state)
      if state.stale { state.passedOver.unconfirmAll() }
      return state.passedOver.unconfirmed
    }
  }

  /// Reports that the last name from ``next()`` was gone (claimed elsewhere) or was taken.
  func note(stale: Bool) {
    state.withLock { $0.misses = stale ? $0.misses + 1 : 0 }
  }

  /// Forces a full listing before the next claim (after a claim failed midway, names taken
  /// from the index may not have been handled).
  func invalidate() {
    state.withLock { $0.stale = true }
  }

  /// Whether the index holds a watch on the shared inotify instance (false before its first
  /// refresh and where inotify is unavailable); for tests.
  var isWatching: Bool { state.withLock { $0.feed.watch != nil } }

  /// Pushes each name of `records` (a length byte, then the name) into `heap`, each an arrival
  /// for `marks`; false when one is not a message name. - Complexity: O(k log n) for k names.
  private static func push(
    _ records: [UInt8], into heap: inout NameHeap, marks: inout PassedOverMarks
  ) -> Bool {
    var foreign = false
    records.withUnsafeBufferPointer { bytes in
      var offset = 0
      while offset < bytes.count {
        let start = offset + 1
        let end = min(start + Int(bytes[offset]), bytes.count)
        if let parsed = PendingName(bytes: UnsafeBufferPointer(rebasing: bytes[start..<end])) {
          heap.push(parsed)
          if !marks.isEmpty { marks.arrived(parsed.id) }
        } else {
          foreign = true
        }
        offset = end
      }
    }
    return !foreign
  }
}
