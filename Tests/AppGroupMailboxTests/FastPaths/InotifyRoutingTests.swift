import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The bounds of the shared inotify instance's routing (System/InotifyRouting.swift), on a
/// private inotify descriptor read by the test alone (no reader thread).
@Suite struct InotifyRoutingTests {
  /// Creates `count` empty files named `prefix` plus a number in `directory`.
  func createFiles(_ count: Int, prefix: String, in directory: URL) throws {
    for number in 0..<count {
      let fd = open(directory.path + "/\(prefix)\(number)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
      try #require(fd >= 0)
      close(fd)
    }
  }

  /// A non-blocking inotify descriptor of the test's own.
  func inotifyDescriptor() throws -> Int32 {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(fd >= 0, "inotify_init1: errno \(errno)")
    return fd
  }

  @Test func `Events waiting for the reader thread past the limit become one overflow per watcher`()
    throws
  {
    let container = try TemporaryContainer()
    let fd = try inotifyDescriptor()
    defer { close(fd) }
    var routing = InotifyRouting()
    let watcher = try routing.subscribe(
      [container.url.path], mask: InotifyMask.arrivals, handler: { _ in }, fd: fd)
    let feed = try routing.subscribe(
      [container.url.path], mask: PendingIndex.mask, handler: nil, fd: fd)
    #expect(watcher.map(\.watch) == feed.map(\.watch))  // one kernel watch, two subscribers
    let total = InotifyRouting.deliveryLimit + 10
    try createFiles(total, prefix: "f", in: container.url)
    // (Values go through locals: #expect cannot capture the non-copyable routing.)
    let queued = routing.readAndRoute(fd)
    #expect(queued)
    let overflow = InotifyEvent(
      watch: -1, mask: UInt32(bitPattern: IN_Q_OVERFLOW), cookie: 0, name: nil)
    let batches = routing.takeDeliveries().map(\.1)
    #expect(batches == [[overflow]])
    // The index's feed is bounded by bytes, not by the watcher's queue: it has every name.
    var records: [UInt8] = []
    let status = routing.take(feed[0].id, into: &records)
    #expect(status == .trusted)
    let expectedBytes = (0..<total).reduce(0) { $0 + 2 + String($1).utf8.count }
    #expect(records.count == expectedBytes)
    // Taken: later events queue again.
    try createFiles(1, prefix: "g", in: container.url)
    let queuedAgain = routing.readAndRoute(fd)
    #expect(queuedAgain)
    let names = routing.takeDeliveries().map { $0.1.map(\.name) }
    #expect(names == [["g0"]])
  }

  @Test func `A feed past its limit drops its names and reports untrusted once`() throws {
    let container = try TemporaryContainer()
    let fd = try inotifyDescriptor()
    defer { close(fd) }
    var routing = InotifyRouting()
    let feed = try routing.subscribe(
      [container.url.path], mask: PendingIndex.mask, handler: nil, fd: fd)
    // 250-byte names: 1,100 of them are more than 256 KiB.
    try createFiles(1_100, prefix: String(repeating: "n", count: 246), in: container.url)
    let queued = routing.readAndRoute(fd)
    #expect(!queued)  // no watcher: nothing for the reader thread
    var records: [UInt8] = [1, 2, 3]
    let status = routing.take(feed[0].id, into: &records)
    #expect(status == .untrusted)
    #expect(records.isEmpty)
    try createFiles(1, prefix: "m", in: container.url)
    _ = routing.readAndRoute(fd)
    let again = routing.take(feed[0].id, into: &records)
    #expect(again == .trusted)
    #expect(records == [2] + Array("m0".utf8))
    // Unsubscribed: the feed is gone and the kernel watch removed (inotify_rm_watch).
    routing.unsubscribe(feed[0], fd: fd)
    let gone = routing.take(feed[0].id, into: &records)
    #expect(gone == .lost)
    let info = try String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)
    #expect(!info.contains("inotify wd:"))
  }
}
