import Dispatch
import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// The queue of events waiting for the reader thread overflows (past
/// ``InotifyRouting/deliveryLimit``) when claims read while a handler is slow: every watcher,
/// also one that subscribed after the overflow, must still be woken, and a watcher whose watch
/// went away must still learn it; and a burst's buffers are not kept by an idle index (found by
/// an adversarial review of the shared instance).
@Suite(.serialized) struct InotifyOverflowTests {
  func createFiles(_ count: Int, prefix: String, in directory: URL) throws {
    for number in 0..<count {
      let fd = open(directory.path + "/\(prefix)\(number)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
      try #require(fd >= 0)
      close(fd)
    }
  }

  /// Routing level: a handler subscriber added while the delivery queue is overflowed.
  @Test func `A watcher subscribed while the delivery queue is overflowed gets its overflow`()
    throws
  {
    let a = try TemporaryContainer()
    let b = try TemporaryContainer()
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(fd >= 0)
    defer { close(fd) }
    var routing = InotifyRouting()
    let first = Locked<[InotifyEvent]>([])
    let late = Locked<[InotifyEvent]>([])
    _ = try routing.subscribe(
      [a.url.path], mask: InotifyMask.arrivals, handler: { e in first.withLock { $0 += e } },
      fd: fd)
    try createFiles(InotifyRouting.deliveryLimit + 1, prefix: "f", in: a.url)
    _ = routing.readAndRoute(fd)  // a claim read them; the reader thread has not taken them yet
    let lateWatch = try routing.subscribe(
      [b.url.path], mask: InotifyMask.arrivals, handler: { e in late.withLock { $0 += e } },
      fd: fd)
    try createFiles(1, prefix: "x", in: b.url)
    _ = routing.readAndRoute(fd)  // another claim reads the late watcher's event
    for (handler, batch) in routing.takeDeliveries() { handler(batch) }  // the reader thread
    let firstGot = first.withLock { $0 }
    let lateGot = late.withLock { $0 }
    #expect(firstGot.contains { $0.has(IN_Q_OVERFLOW) })
    // The late watcher must learn of "x0" or at least get an overflow.
    #expect(
      lateGot.contains { $0.name == "x0" || $0.has(IN_Q_OVERFLOW) },
      "late watcher (wd \(lateWatch[0].watch)) got \(lateGot)")
  }

  /// Instance level, with the real reader thread: while a handler is slow, claims read more
  /// than deliveryLimit events; a watcher that subscribes then must still wake.
  @Test func `A watcher armed while a slow handler runs and claims overflow the queue still wakes`()
    throws
  {
    let a = try TemporaryContainer()
    let b = try TemporaryContainer()
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(fd >= 0)
    let instance = InotifyInstance(fd: fd)
    defer { instance.shutdown() }
    let entered = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    let calls = Locked(0)
    let slow = try instance.add(path: a.url.path, mask: InotifyMask.arrivals) { _ in
      let n = calls.withLock {
        $0 += 1; return $0
      }
      if n == 1 {
        entered.signal()
        proceed.wait()
      }
    }
    let feed = try instance.addFeed(path: a.url.path, mask: PendingIndex.mask)
    try createFiles(1, prefix: "s", in: a.url)
    #expect(entered.wait(timeout: .now() + 30) == .success)
    // The reader thread is inside the slow handler: claims (take) read what arrives.
    var records: [UInt8] = []
    try createFiles(InotifyRouting.deliveryLimit + 1, prefix: "f", in: a.url)
    _ = instance.take(feed, into: &records)
    // A watcher arms now (e.g. a new consumer's wait) and its scan found nothing.
    let woke = DispatchSemaphore(value: 0)
    let lateWatch = try instance.add(path: b.url.path, mask: InotifyMask.arrivals) { events in
      if events.contains(where: { $0.name == "m0" || $0.has(IN_Q_OVERFLOW) }) { woke.signal() }
    }
    try createFiles(1, prefix: "m", in: b.url)  // a message arrives for the late watcher
    _ = instance.take(feed, into: &records)  // a claim on some mailbox reads it
    proceed.signal()
    let wokeUp = woke.wait(timeout: .now() + 30) == .success
    #expect(wokeUp, "the late watcher never woke for m0")
    instance.remove(lateWatch)
    instance.remove(slow)
    instance.remove(feed)
  }

  /// Routing level: a watcher whose directory went away (IN_DELETE_SELF, IN_IGNORED) just before
  /// the delivery queue overflowed (its subscription already gone from the table).
  @Test func `A watch lost just before the delivery queue overflows is still reported`()
    throws
  {
    let a = try TemporaryContainer()
    let gone = try TemporaryContainer()
    let notify = gone.url.appendingPathComponent("@notify")
    try FileManager.default.createDirectory(at: notify, withIntermediateDirectories: true)
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(fd >= 0)
    defer { close(fd) }
    var routing = InotifyRouting()
    let busy = Locked<[InotifyEvent]>([])
    let lost = Locked<[InotifyEvent]>([])
    _ = try routing.subscribe(
      [notify.path], mask: InotifyMask.arrivals | InotifyMask.selfGone | InotifyMask.options,
      handler: { e in lost.withLock { $0 += e } }, fd: fd)
    _ = try routing.subscribe(
      [a.url.path], mask: InotifyMask.arrivals, handler: { e in busy.withLock { $0 += e } },
      fd: fd)
    try FileManager.default.removeItem(at: notify)  // IN_DELETE_SELF, IN_IGNORED
    try createFiles(InotifyRouting.deliveryLimit + 1, prefix: "f", in: a.url)
    _ = routing.readAndRoute(fd)  // claims read all of it while the reader thread was busy
    for (handler, batch) in routing.takeDeliveries() { handler(batch) }
    let busyGot = busy.withLock { $0 }
    let lostGot = lost.withLock { $0 }
    #expect(busyGot.contains { $0.has(IN_Q_OVERFLOW) })
    #expect(
      lostGot.contains { $0.mask & InotifyMask.watchLost != 0 },
      "the watcher of the deleted directory got \(lostGot)")
  }

  @Test func `An idle index and its feed do not keep a burst's buffers`() throws {
    let a = try TemporaryContainer()
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(fd >= 0)
    defer { close(fd) }
    var routing = InotifyRouting()
    let feed = try routing.subscribe([a.url.path], mask: PendingIndex.mask, handler: nil, fd: fd)
    try createFiles(2_400, prefix: String(repeating: "n", count: 96), in: a.url)
    _ = routing.readAndRoute(fd)
    var records: [UInt8] = []  // the index's State.records
    let first = routing.take(feed[0].id, into: &records)
    let taken = records.count
    for _ in 0..<5 { _ = routing.take(feed[0].id, into: &records) }  // idle claims
    let retained = records.capacity + (routing.feeds[feed[0].id]?.records.capacity ?? 0)
    #expect(first == .trusted)
    #expect(taken > 200_000)
    #expect(retained < 16_384, "an idle index and its feed retain \(retained) bytes")
  }
}
