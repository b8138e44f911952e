import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The in-memory index of pending names (Spool/PendingIndex.swift) keeps claims FIFO when other
/// mailbox instances or processes add messages after this one listed `pending/`. Each second
/// instance here has its own spool and index, as another process would, and its own
/// subscription to the process's one inotify watch on `pending/` (SharedInotifyTests covers
/// the sharing).
@Suite(.serialized) struct PendingIndexTests {
  @Test func `An import with an older date made after the first claim is claimed next`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let consumer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let producer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    for name in ["a", "b", "c"] {
      try producer.enqueue(name)
      clock.advance(1)
    }
    #expect(try consumer.claimPending(limit: 1).map(\.message) == ["a"])
    try producer.enqueue("old", id: UUID(), enqueuedAt: clock.now.addingTimeInterval(-3600))
    try producer.enqueue("d")
    #expect(try consumer.claimPending().map(\.message) == ["old", "b", "c", "d"])
  }

  @Test func `A message released by another instance goes back ahead of newer ones`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let first: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let second: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    for name in ["a", "b", "c"] {
      try first.enqueue(name)
      clock.advance(0.001)
    }
    let held = try second.claimPending(limit: 1)
    #expect(held.map(\.message) == ["a"])
    let taken = try first.claimPending(limit: 1)
    #expect(taken.map(\.message) == ["b"])
    try held[0].release()
    let next = try first.claimPending(limit: 1)
    #expect(next.map(\.message) == ["a"])
    #expect(next.map(\.deliveryCount) == [2])
    #expect(try first.claimPending().map(\.message) == ["c"])
  }

  @Test func `A recovered claim is claimed before newer messages by an instance that had listed`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(claimTimeout: 10)
    let consumer: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    let other: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    for name in ["a", "b", "c"] {
      try consumer.enqueue(name)
      clock.advance(0.001)
    }
    let abandoned = try other.claimPending(limit: 1)
    #expect(abandoned.map(\.message) == ["a"])
    #expect(try consumer.claimPending(limit: 1).map(\.message) == ["b"])
    clock.advance(11)
    let recovered = try consumer.claimPending(limit: 1)
    #expect(recovered.map(\.message) == ["a"])
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try abandoned[0].acknowledge() }
    // The consumer's own claim of "b" ran out too and went back to its place before "c".
    #expect(try consumer.claimPending().map(\.message) == ["b", "c"])
  }

  @Test func `Names another instance claimed are skipped and the rest come in order`() throws {
    let container = try TemporaryContainer()
    let limits = AppGroupMailboxLimits(maxMessages: 1_000)
    let consumer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: limits, durability: .relaxed)
    let other: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: limits, durability: .relaxed)
    for value in 0..<100 { try consumer.enqueue(value) }
    #expect(try consumer.claimPending(limit: 1).map(\.message) == [0])
    let stolen = try other.claimPending(limit: 60)
    #expect(stolen.map(\.message) == Array(1...60))
    #expect(try consumer.claimPending(limit: 5).map(\.message) == Array(61...65))
    try stolen[59].release()
    #expect(try consumer.claimPending().map(\.message) == [60] + Array(66..<100))
  }

  @Test func `Messages produced by another process after the first claim are claimed in order`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: AppGroupMailboxLimits(maxMessages: 1_000))
    try consumer.enqueue(-1)
    #expect(try consumer.claimPending().map(\.message) == [-1])
    let result = try Processes.runWorker(["produce", container.url.path, "jobs", "0", "20"])
    #expect(result.status == 0)
    #expect(try consumer.claimPending().map(\.message) == Array(0..<20))
  }

  @Test(arguments: [true, false])
  func `The index returns names in key order, including ones added after it listed`(
    watching: Bool
  ) throws {
    let container = try TemporaryContainer()
    let path = container.url.path
    let fd = open(path, O_RDONLY | O_DIRECTORY)
    try #require(fd >= 0)
    defer { close(fd) }
    func add(_ micros: Int64, _ sequence: UInt64) throws -> PendingName {
      let name = PendingName(
        key: MessageKey(micros: micros, sequence: sequence), id: UUID(), attempts: 0)
      try Data().write(to: container.url.appendingPathComponent(name.fileName))
      return name
    }
    let later = try add(20, 2)
    let earlier = try add(10, 1)
    try Data().write(to: container.url.appendingPathComponent("foreign.tmp"))
    func list(_ add: (PendingName) -> Void) throws -> [DirectoryEntry] {
      try PendingIndex.listing(fd, add)
    }
    let index = PendingIndex(watching: watching)
    #expect(try index.refresh(pending: fd, list: list).map(\.name) == ["foreign.tmp"])
    #expect(index.next() == earlier)
    // A claim renames what it took away.
    try FileManager.default.removeItem(at: container.url.appendingPathComponent(earlier.fileName))
    let older = try add(5, 3)
    let newest = try add(30, 4)
    // Watching, the index learns the new names from inotify and does not list (so it reports
    // no foreign entry); without inotify it lists again and reports the foreign entry again.
    #expect(
      try index.refresh(pending: fd, list: list).map(\.name) == (watching ? [] : ["foreign.tmp"]))
    #expect(index.next() == older)
    #expect(index.next() == later)
    #expect(index.next() == newest)
    #expect(index.next() == nil)
  }

  @Test func `A heap of names pops them in key order`() {
    var heap = NameHeap()
    let keys: [(Int64, UInt64)] = [(5, 1), (1, 9), (3, 2), (1, 2), (9, 0), (3, 1)]
    for (micros, sequence) in keys {
      heap.push(
        PendingName(key: MessageKey(micros: micros, sequence: sequence), id: UUID(), attempts: 0))
    }
    var popped: [MessageKey] = []
    while let name = heap.pop() { popped.append(name.key) }
    #expect(
      popped.map { [$0.micros, Int64($0.sequence)] } == [
        [1, 2], [1, 9], [3, 1], [3, 2], [5, 1], [9, 0],
      ])
  }

  @Test func `A foreign name reported by inotify makes the index list and report it`() throws {
    let container = try TemporaryContainer()
    let fd = open(container.url.path, O_RDONLY | O_DIRECTORY)
    try #require(fd >= 0)
    defer { close(fd) }
    var listings = 0
    func list(_ add: (PendingName) -> Void) throws -> [DirectoryEntry] {
      listings += 1
      return try PendingIndex.listing(fd, add)
    }
    let index = PendingIndex(watching: true)
    #expect(try index.refresh(pending: fd, list: list).isEmpty)
    #expect(listings == 1)
    let name = PendingName(key: MessageKey(micros: 7, sequence: 1), id: UUID(), attempts: 0)
    try Data().write(to: container.url.appendingPathComponent(name.fileName))
    #expect(try index.refresh(pending: fd, list: list).isEmpty)
    #expect(listings == 1)
    try Data().write(to: container.url.appendingPathComponent("planted"))
    #expect(try index.refresh(pending: fd, list: list).map(\.name) == ["planted"])
    #expect(listings == 2)
    #expect(index.next() == name)
    #expect(index.next() == nil)
    // A name a claim took but left in pending/ goes back in.
    index.push([name])
    #expect(index.next() == name)
  }
}
