import CMailboxShims
import Dispatch
import Foundation
import Glibc
import MailboxLocks

/// The one inotify instance this process shares among all its watchers.
///
/// ``acquire()`` opens the instance for the first watcher and ``release(_:)`` closes it when the
/// last one leaves, so a process holds at most one inotify descriptor (`fs.inotify.
/// max_user_instances` is small: 128 per user by default) however many mailboxes it watches.
/// Thread safety: every member may be called from any thread.
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
      let instance = try InotifyInstance(fd: Syscall.inotifyInit())
      instance.start()
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
}

/// A subscription to one watch of an ``InotifyInstance``.
struct InotifyWatch: Hashable, Sendable {
  var watch: Int32
  var id: Int
}

/// An open inotify descriptor read by one dedicated thread (never by a blocking read in a Swift
/// concurrency task). The thread waits in poll(2) on the descriptor and on a wake-up pipe; events
/// are parsed and handed, in batches per read, to the subscribers of each watch, on that thread;
/// `IN_Q_OVERFLOW` goes to every subscriber. A dedicated thread wakes one hop sooner than a
/// Dispatch read source (which goes through Dispatch's manager thread).
final class InotifyInstance: Sendable {
  typealias Handler = @Sendable ([InotifyEvent]) -> Void

  private struct Subscriber {
    var id: Int
    var mask: UInt32
    var handler: Handler
  }

  private struct Table {
    var watches: [Int32: [Subscriber]] = [:]
    var nextID = 1
    var closed = false
  }

  let fd: Int32
  /// The pipe that stops the reader thread: [read end, write end].
  private let wakeRead: Int32
  private let wakeWrite: Int32
  private let exited = DispatchSemaphore(value: 0)
  private let reader = Locked<pthread_t?>(nil)
  private let table = Locked(Table())

  /// Read buffer size: many events per read(2), and far above the minimum of
  /// `sizeof(struct inotify_event) + NAME_MAX + 1` (smaller reads fail with `EINVAL`).
  static let bufferSize = 64 * 1024

  /// Takes ownership of the inotify descriptor `fd` (closed on failure too).
  /// - Throws: ``SystemCallError`` from pipe2(2).
  init(fd: Int32) throws {
    var pipe: [Int32] = [-1, -1]
    guard cmailbox_pipe_cloexec(&pipe) == 0 else {
      let error = SystemCallError.current("pipe2")
      Syscall.close(fd)
      throw error
    }
    self.fd = fd
    wakeRead = pipe[0]
    wakeWrite = pipe[1]
  }

  /// Starts the reader thread.
  func start() {
    let thread = Thread { [self] in run() }
    thread.name = "AppGroupMailbox.inotify"
    thread.start()
  }

  /// The reader thread: poll, read until `EAGAIN`, deliver; on the wake-up pipe, close both
  /// descriptors and exit.
  private func run() {
    reader.withLock { $0 = pthread_self() }
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: Self.bufferSize, alignment: MemoryLayout<inotify_event>.alignment)
    var descriptors = [
      pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      let ready = poll(&descriptors, 2, -1)
      if ready < 0 {
        if Errno.current == .interrupted { continue }
        break
      }
      if descriptors[1].revents != 0 { break }
      if descriptors[0].revents & Int16(POLLIN) != 0 { readAvailable(buffer) }
      if descriptors[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { break }
    }
    buffer.deallocate()
    Syscall.close(fd)
    Syscall.close(wakeRead)
    exited.signal()
  }

  /// Adds (or joins) a watch on `path` for `mask` and subscribes `handler` to it. Subscribers of
  /// one inode share its watch, whose mask is the union of theirs; each filters for itself.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2) (`ENOSPC` at the watch limit).
  func add(path: String, mask: UInt32, handler: @escaping Handler) throws -> InotifyWatch {
    try table.withLock { table in
      // IN_MASK_ADD: another subscriber may already watch this inode, and inotify_add_watch
      // would otherwise replace its mask (inotify(7)).
      let watch = try Syscall.inotifyAddWatch(fd, path, mask | UInt32(bitPattern: IN_MASK_ADD))
      let id = table.nextID
      table.nextID += 1
      table.watches[watch, default: []].append(
        Subscriber(id: id, mask: mask, handler: handler))
      return InotifyWatch(watch: watch, id: id)
    }
  }

  /// Adds (or joins) a watch on each of `paths` for `mask`, subscribing `handler` to all of them
  /// as one subscriber: each read's events of every one of these watches reach `handler` in one
  /// batch, in the order the kernel queued them (what pairing a rename's two halves needs).
  /// Removes what it added when one fails.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2).
  func add(paths: [String], mask: UInt32, handler: @escaping Handler) throws -> [InotifyWatch] {
    try table.withLock { table in
      let id = table.nextID
      table.nextID += 1
      var added: [InotifyWatch] = []
      do {
        for path in paths {
          let watch = try Syscall.inotifyAddWatch(fd, path, mask | UInt32(bitPattern: IN_MASK_ADD))
          table.watches[watch, default: []].append(
            Subscriber(id: id, mask: mask, handler: handler))
          added.append(InotifyWatch(watch: watch, id: id))
        }
      } catch {
        for subscription in added { Self.unsubscribe(subscription, &table, fd) }
        throw error
      }
      return added
    }
  }

  /// Unsubscribes; the last subscriber of a watch removes it from the kernel.
  func remove(_ subscription: InotifyWatch) {
    table.withLock { table in Self.unsubscribe(subscription, &table, fd) }
  }

  private static func unsubscribe(_ subscription: InotifyWatch, _ table: inout Table, _ fd: Int32) {
    guard var subscribers = table.watches[subscription.watch] else { return }
    subscribers.removeAll { $0.id == subscription.id }
    if subscribers.isEmpty {
      table.watches[subscription.watch] = nil
      Syscall.inotifyRemoveWatch(fd, subscription.watch)
    } else {
      table.watches[subscription.watch] = subscribers
    }
  }

  /// Stops the reader thread, which closes the descriptor. Waits for that unless called on the
  /// reader thread itself (from a handler, where waiting would deadlock).
  func shutdown() {
    table.withLock { $0.closed = true }
    var byte: UInt8 = 1
    _ = Glibc.write(wakeWrite, &byte, 1)
    Syscall.close(wakeWrite)
    let onReader = reader.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    if !onReader { exited.wait() }
  }

  /// Reads until `EAGAIN` (retrying `EINTR`), then hands each subscriber its events.
  private func readAvailable(_ buffer: UnsafeMutableRawBufferPointer) {
    var events: [InotifyEvent] = []
    while true {
      let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
      if count > 0 {
        events += InotifyEventParser.parse(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        continue
      }
      if count < 0 && Errno.current == .interrupted { continue }
      break  // EAGAIN: drained
    }
    guard !events.isEmpty else { return }
    var deliveries: [(Handler, [InotifyEvent])] = []
    table.withLock { table in
      guard !table.closed else { return }
      var batches: [Int: (Handler, [InotifyEvent])] = [:]
      var order: [Int] = []
      func deliver(_ subscriber: Subscriber, _ event: InotifyEvent) {
        if batches[subscriber.id] == nil {
          batches[subscriber.id] = (subscriber.handler, [])
          order.append(subscriber.id)
        }
        batches[subscriber.id]!.1.append(event)
      }
      for event in events {
        if event.watch == -1 {
          for subscribers in table.watches.values {
            for subscriber in subscribers { deliver(subscriber, event) }
          }
          continue
        }
        for subscriber in table.watches[event.watch] ?? [] { deliver(subscriber, event) }
        if event.has(IN_IGNORED) { table.watches[event.watch] = nil }
      }
      deliveries = order.compactMap { batches[$0] }
    }
    for (handler, batch) in deliveries { handler(batch) }
  }
}
