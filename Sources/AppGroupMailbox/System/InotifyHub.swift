import CMailboxShims
import Dispatch
import Foundation
import Glibc
import MailboxLocks

/// The one inotify instance this process shares among all its users: every watcher (wake-ups,
/// lifecycle events, waiting for room) and every pending index (``PendingIndex``).
///
/// ``acquire()`` opens the instance for the first user and ``release(_:)`` closes it when the
/// last one leaves, so a process holds at most one inotify descriptor (`fs.inotify.
/// max_user_instances` is small: 128 per user by default, inotify(7)) however many mailboxes it
/// watches or claims from. Thread safety: every member may be called from any thread.
enum InotifyHub {
  private struct State {
    var instance: InotifyInstance?
    var users = 0
  }

  private static let state = Locked(State())

  /// Joins the shared instance, creating it when this is the first user.
  /// - Throws: ``SystemCallError`` from inotify_init1(2) (`EMFILE` at the instance limit).
  static func acquire() throws -> InotifyInstance {
    try state.withLock { state in
      if let instance = state.instance {
        state.users += 1
        return instance
      }
      let instance = InotifyInstance(fd: try Syscall.inotifyInit())
      state.instance = instance
      state.users = 1
      return instance
    }
  }

  /// Leaves the shared instance; the last user closes it (and waits until its descriptor is
  /// closed, unless called from the instance's reader thread).
  static func release(_ instance: InotifyInstance) {
    let last = state.withLock { state -> Bool in
      guard state.instance === instance else { return false }
      state.users -= 1
      guard state.users == 0 else { return false }
      state.instance = nil
      return true
    }
    if last { instance.shutdown() }
  }

  /// How many users hold the shared instance (0 when it is closed); for tests.
  static var users: Int { state.withLock { $0.users } }
}

/// A subscription to one watch of an ``InotifyInstance``.
struct InotifyWatch: Hashable, Sendable {
  var watch: Int32
  var id: Int
}

/// An open, non-blocking inotify descriptor, read by whichever thread needs its events first.
///
/// Two kinds of subscriber share it. A handler subscriber (a watcher) has its events handed, in
/// batches per read, to its handler on one dedicated thread (`AppGroupMailbox.inotify`, never a
/// blocking read in a Swift concurrency task), started with the first handler subscriber. A
/// feed subscriber (a pending index) has the names of its events appended to its feed, which it
/// takes with ``take(_:reading:into:)``. Every read(2) of the descriptor and the routing of what it
/// returned happen under one lock, shared by the reader thread and the claims: each event is
/// routed exactly once, in the kernel's order, and an event queued before a ``take(_:reading:into:)``
/// began is in that take's result whichever thread read it. A claim that reads events for a
/// handler subscriber queues them for the reader thread (and wakes it) instead of running the
/// handler itself, so handlers only ever run on the reader thread. `IN_Q_OVERFLOW` goes to
/// every subscriber. The reader thread waits in poll(2) and reads without blocking, so it never
/// hangs in read(2) after a claim took what woke it.
final class InotifyInstance: Sendable {
  typealias Handler = @Sendable ([InotifyEvent]) -> Void

  let fd: Int32
  private let routing: Locked<InotifyRouting>
  private let exited = DispatchSemaphore(value: 0)
  private let reader = Locked<pthread_t?>(nil)

  /// Takes ownership of the inotify descriptor `fd` (opened with `IN_NONBLOCK`).
  init(fd: Int32) {
    self.fd = fd
    routing = Locked(InotifyRouting())
  }

  /// Adds (or joins) a watch on `path` for `mask` and subscribes `handler` to it. Subscribers of
  /// one inode share its watch, whose mask is the union of theirs; each filters for itself.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2) (`ENOSPC` at the watch limit), or
  ///   from pipe2(2) when the reader thread has to start.
  func add(path: String, mask: UInt32, handler: @escaping Handler) throws -> InotifyWatch {
    let added = try add(paths: [path], mask: mask, handler: handler)
    guard let watch = added.first else {
      throw SystemCallError(call: "inotify_add_watch", errno: .invalidArgument)
    }
    return watch
  }

  /// Adds (or joins) a watch on each of `paths` for `mask`, subscribing `handler` to all of them
  /// as one subscriber: each read's events of every one of these watches reach `handler` in one
  /// batch, in the order the kernel queued them (what pairing a rename's two halves needs).
  /// Removes what it added when one fails.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2) or pipe2(2).
  func add(paths: [String], mask: UInt32, handler: @escaping Handler) throws -> [InotifyWatch] {
    try routing.withLock { routing in
      try startReader(&routing)
      return try routing.subscribe(paths, mask: mask, handler: handler, fd: fd)
    }
  }

  /// Adds (or joins) a watch on `path` for `mask` with a feed: the names of its `IN_MOVED_TO`
  /// and `IN_CREATE` events wait in memory for ``take(_:reading:into:)``.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2) (`ENOSPC` at the watch limit).
  func addFeed(path: String, mask: UInt32) throws -> InotifyWatch {
    let added = try routing.withLock { routing in
      try routing.subscribe([path], mask: mask, handler: nil, fd: fd)
    }
    guard let watch = added.first else {
      throw SystemCallError(call: "inotify_add_watch", errno: .invalidArgument)
    }
    return watch
  }

  /// Reads what the descriptor has queued without blocking (one read(2) unless the buffer
  /// fills), routes it, then moves `feed`'s names into `records` (replacing its contents; each
  /// name is one length byte and the name's bytes, in the kernel's order). Every event queued
  /// before this call began is either in `records` or reported by the status. Without
  /// `reading` it only takes what earlier reads routed: every event queued before the last read
  /// began.
  /// - Complexity: O(e) in the events read and the names taken.
  func take(_ feed: InotifyWatch, reading: Bool = true, into records: inout [UInt8])
    -> InotifyFeedStatus
  {
    routing.withLock { routing in
      if reading, routing.readAndRoute(fd), routing.wakeWrite >= 0 {
        var byte: UInt8 = 1
        _ = Glibc.write(routing.wakeWrite, &byte, 1)  // EAGAIN: a wake-up is already pending
      }
      return routing.take(feed.id, into: &records)
    }
  }

  /// Unsubscribes; the last subscriber of a watch removes it from the kernel.
  func remove(_ subscription: InotifyWatch) {
    routing.withLock { routing in routing.unsubscribe(subscription, fd: fd) }
  }

  /// Stops the reader thread, which closes the descriptor (closed here when no thread ran).
  /// Waits for that unless called on the reader thread itself (from a handler, where waiting
  /// would deadlock).
  func shutdown() {
    let started = routing.withLock { routing -> Bool in
      routing.closed = true
      if routing.wakeWrite >= 0 {
        var byte: UInt8 = 1
        _ = Glibc.write(routing.wakeWrite, &byte, 1)
        Syscall.close(routing.wakeWrite)
        routing.wakeWrite = -1
      }
      return routing.started
    }
    guard started else {
      Syscall.close(fd)
      return
    }
    let onReader = reader.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    if !onReader { exited.wait() }
  }

  /// Starts the reader thread for the first handler subscriber (under the routing lock).
  private func startReader(_ routing: inout InotifyRouting) throws {
    guard !routing.started else { return }
    var pipe: [Int32] = [-1, -1]
    guard cmailbox_pipe_cloexec(&pipe) == 0 else { throw SystemCallError.current("pipe2") }
    routing.wakeWrite = pipe[1]
    routing.started = true
    let wakeRead = pipe[0]
    let thread = Thread { [self] in run(wakeRead) }
    thread.name = "AppGroupMailbox.inotify"
    thread.start()
  }

  /// The reader thread: poll the descriptor and the wake-up pipe; read and route without
  /// blocking; hand the queued batches to their handlers outside the lock; on shutdown, close
  /// the descriptor and the pipe's read end.
  private func run(_ wakeRead: Int32) {
    reader.withLock { $0 = pthread_self() }
    var descriptors = [
      pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
    ]
    var wakeBytes = [UInt8](repeating: 0, count: 64)
    while true {
      let ready = poll(&descriptors, 2, -1)
      if ready < 0 {
        if Errno.current == .interrupted { continue }
        break
      }
      if descriptors[1].revents != 0 { _ = Glibc.read(wakeRead, &wakeBytes, wakeBytes.count) }
      let readable = descriptors[0].revents & Int16(POLLIN) != 0
      let batches = routing.withLock { routing -> [(Handler, [InotifyEvent])]? in
        guard !routing.closed else { return nil }
        if readable { _ = routing.readAndRoute(fd) }
        return routing.takeDeliveries()
      }
      guard let batches else { break }
      for (handler, batch) in batches { handler(batch) }
      if descriptors[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { break }
    }
    Syscall.close(fd)
    Syscall.close(wakeRead)
    exited.signal()
  }
}
