import Foundation
import Glibc
import MailboxLocks

/// The pending names of one spool, kept in memory between claims so a claim at depth n costs
/// O(log n) instead of a listing and sort of `pending/` (O(n log n)).
///
/// How it stays FIFO-correct across processes: before its first use the index adds an inotify
/// watch (IN_MOVED_TO | IN_CREATE) on `pending/`, *then* lists it (watch first, then scan, so
/// nothing arriving in between is missed). Every way a message enters `pending/` — an enqueue
/// (single or batch) or import by any process (rename), a release, a claim put back, a
/// recovered claim (rename back under the original name, so the original position), a
/// promotion from `delayed/` (rename), an outside `mv` (rename) or `ln` (link) — queues an
/// event in the kernel before that system call returns. Each claim call first drains the queued events without
/// blocking and pushes each named message into a min-heap ordered by ``MessageKey`` (priority level, highest
/// first, then enqueuedAt and sequence), so an import with an older date, a release or a recovery goes ahead of newer messages exactly
/// as a fresh sorted listing would order them. Names are hints: a name another consumer already
/// claimed fails its rename with ENOENT and is skipped, duplicates are harmless, and the file
/// itself is checked as before (lstat, links, expiry, dead letters: see ``Spool/claim``). A
/// name the claim takes but leaves in `pending/` (a young hard link, an entry
/// a failed quarantine could not move) is pushed back with ``push(_:)``.
///
/// A reported name that is not a message name (or not valid UTF-8) makes the same refresh list
/// `pending/`, whose foreign entries (with their exact bytes) the claim then quarantines.
///
/// The index falls back to a full listing when it cannot be trusted: on `IN_Q_OVERFLOW`, when
/// the watch is removed (`IN_IGNORED`: directory deleted, moved or unmounted), after a claim
/// failed midway, and after 32 consecutive stale names (another process consumed what this one
/// knew of: relisting is cheaper than failing renames). Where inotify is unavailable
/// (`EMFILE`, `ENOSPC`, or no inotify) every claim lists `pending/` as before. One inotify
/// instance (one descriptor) is held per open spool after its first claim, closed with it:
/// not the watcher's process-wide ``InotifyHub``, whose events arrive on its reader thread,
/// while a claim must see every event queued before it began (a synchronous, non-blocking
/// read of its own descriptor). A debug build's ``FaultInjection`` rules on `inotify_init1`
/// and `inotify_add_watch` (a simulated inotify limit) apply here as to the watcher.
/// inotify sees no changes made by other NFS clients (inotify(7)): use local filesystems.
///
/// Memory: one ``PackedName`` (40 bytes) per known pending message, in a ``NameHeap`` whose
/// storage grows in chunks without copying; a listing parses names straight from getdents64(2)'s
/// buffer (``Syscall/forEachEntry(_:_:)``), so building the index allocates nothing per entry.
/// Never payload bytes.
final class PendingIndex: Sendable {
  private struct State: ~Copyable {
    var watch: Int32 = -1
    var unavailable = false
    var stale = true
    var misses = 0
    var heap = NameHeap()
  }

  private let state: Locked<State>

  /// An empty index; `watching` false never uses inotify (every refresh lists), as when inotify
  /// is unavailable.
  init(watching: Bool = true) {
    var initial = State()
    initial.unavailable = !watching
    state = Locked(initial)
  }
  static let missesBeforeRelisting = 32

  deinit {
    state.withLock { state in
      if state.watch >= 0 { Syscall.close(state.watch) }
    }
  }

  /// Brings the index up to date with `pending/` (descriptor `pending`) before a claim call.
  /// `list` lists `pending/`, handing each message name to its argument (in any order) and
  /// returning the entries under any other name (``listing(_:_:)``); it runs only
  /// when the index cannot be trusted, or when inotify reported a name that is not a message
  /// name. Returns the foreign entries of that listing (empty when it did not list), for the
  /// caller to quarantine.
  /// - Complexity: O(e log n) for e queued events; O(n) when it has to list (the names are
  ///   heapified in place, not sorted).
  func refresh(
    pending: Int32,
    list: ((PendingName) -> Void) throws -> [DirectoryEntry]
  ) throws -> [DirectoryEntry] {
    try state.withLock { state in
      if !state.unavailable, state.watch < 0 {
        state.watch = Self.watch(pending)
        state.unavailable = state.watch < 0
        state.stale = true
      }
      if state.watch >= 0, !state.stale {
        var foreign = false
        let untrusted = Self.drain(state.watch) { name in
          if let parsed = PendingName(bytes: name) {
            state.heap.push(parsed)
          } else {
            foreign = true
          }
        }
        // A foreign name (or one that is not valid UTF-8) is handled from a listing, which
        // gives its exact bytes.
        state.stale = untrusted || foreign
      }
      guard state.unavailable || state.stale || state.misses >= Self.missesBeforeRelisting
      else { return [] }
      if state.watch >= 0 { _ = Self.drain(state.watch) { _ in } }
      state.heap.removeAll()
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

  /// Lists `pending` for ``refresh(pending:list:)``: hands each message name to `add` and
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

  /// Reports that the last name from ``next()`` was gone (claimed elsewhere) or was taken.
  func note(stale: Bool) {
    state.withLock { $0.misses = stale ? $0.misses + 1 : 0 }
  }

  /// Forces a full listing before the next claim (after a claim failed midway, names taken
  /// from the index may not have been handled).
  func invalidate() {
    state.withLock { $0.stale = true }
  }

  /// Opens a non-blocking inotify instance watching `pending` for new names; -1 when inotify
  /// is unavailable (inotify_init1(2): EMFILE, ENFILE; inotify_add_watch(2): ENOSPC). Both
  /// calls consult ``FaultInjection`` in debug builds, so a simulated inotify limit applies to
  /// the index as to the watcher.
  private static func watch(_ pending: Int32) -> Int32 {
    if FaultInjection.check("inotify_init1") != nil { return -1 }
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { return -1 }
    let mask = UInt32(IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)
    guard FaultInjection.check("inotify_add_watch") == nil,
      inotify_add_watch(fd, "/proc/self/fd/\(pending)", mask) >= 0
    else {
      Syscall.close(fd)
      return -1
    }
    return fd
  }

  /// Reads the queued events without blocking (usually one read(2)), handing each name to
  /// `body`. Returns true when
  /// the index can no longer be trusted (queue overflow, watch removed, read error).
  private static func drain(_ fd: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
    let capacity = 64 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    defer { buffer.deallocate() }
    var untrusted = false
    while true {
      let got = read(fd, buffer, capacity)
      if got < 0 {
        let code = Errno.current
        if code == .interrupted { continue }
        return untrusted || code != .wouldBlock
      }
      if got == 0 { return true }
      var offset = 0
      while offset + 16 <= got {
        let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
        let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        if mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)
          != 0
        {
          untrusted = true
        } else if length > 0 {
          let start = buffer.advanced(by: offset + 16).assumingMemoryBound(to: UInt8.self)
          let bytes = UnsafeBufferPointer(start: start, count: length)
          let end = bytes.firstIndex(of: 0) ?? length
          body(UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
        offset += 16 + length
      }
      // A read returns every event queued when it ran, up to the buffer: read again only when
      // the buffer may have cut the queue short (events queued later belong to operations that
      // were not finished when this claim began).
      if got < capacity - (16 + 256) { return untrusted }
    }
  }
}
