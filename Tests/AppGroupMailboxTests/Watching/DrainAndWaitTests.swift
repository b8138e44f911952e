import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// The consumer API in one process: drain's hand-out rules, the blocking wait, closing, and
/// which operations post a notification name.
@Suite struct DrainAndWaitTests {
  /// Values handed to a drain handler, in order.
  final class Handled: Sendable {
    let values = Locked<[Int]>([])
    func append(_ value: Int) { values.withLock { $0.append(value) } }
    var all: [Int] { values.withLock { $0 } }
  }

  @Test func `Cancelling drain releases the claims it did not hand out, in their places`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    for value in 0..<10 { try mailbox.enqueue(value) }
    let handled = Handled()
    try await mailbox.drain(batchSize: 5) { claim in
      handled.append(claim.message)
      if claim.message == 1 { withUnsafeCurrentTask { $0?.cancel() } }
    }
    #expect(handled.all == [0, 1])
    #expect(container.names("claimed") == [])
    let rest = try mailbox.claimPending()
    #expect(rest.map(\.message) == Array(2..<10))
    // 2, 3 and 4 were claimed in the batch but never handed out: no delivery counted.
    #expect(rest.map(\.deliveryCount) == [1, 1, 1, 1, 1, 1, 1, 1])
  }

  /// A handler that stops for the cancellation (its `Task.sleep` throws) made drain rethrow
  /// `CancellationError` instead of returning as documented (adversarial review). Its delivery
  /// still counts: uncounted, a message no handler finishes in the time it gets held the head
  /// of the line for ever and never became a dead letter (a second review).
  @Test(arguments: [true, false])
  func `A handler stopped by a cancellation ends the drain, its delivery counted`(
    pendingOnly: Bool
  ) async throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    for value in 0..<4 { try mailbox.enqueue(value) }
    let handled = Handled()
    let handler: (AppGroupMailbox<Int>.Claim) async throws -> Void = { claim in
      handled.append(claim.message)
      if claim.message == 1 {
        withUnsafeCurrentTask { $0?.cancel() }
        try Task.checkCancellation()
      }
    }
    // In a task of its own, which the handler cancels (the test's task stays uncancelled).
    try await Task {
      if pendingOnly {
        try await mailbox.drainPending(batchSize: 3, handler: handler)
      } else {
        try await mailbox.drain(batchSize: 3, handler: handler)
      }
    }.value
    #expect(handled.all == [0, 1])
    #expect(container.names("claimed") == [])
    let rest = try mailbox.claimPending()
    #expect(rest.map(\.message) == [1, 2, 3])
    #expect(rest.map(\.deliveryCount) == [2, 1, 1])
    // A CancellationError without a cancellation is a handler error like any other.
    try rest[0].release()
    for claim in rest.dropFirst() { try claim.acknowledge() }
    await #expect(throws: CancellationError.self) {
      try await mailbox.drainPending { _ in throw CancellationError() }
    }
    #expect(try mailbox.claimPending().map(\.deliveryCount) == [4])
  }

  @Test func `A handler error releases its claim and the rest of the batch, then propagates`()
    async throws
  {
    struct Refused: Error {}
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    for value in 0..<6 { try mailbox.enqueue(value) }
    let handled = Handled()
    await #expect(throws: Refused.self) {
      try await mailbox.drain(batchSize: 5) { claim in
        handled.append(claim.message)
        if claim.message == 3 { throw Refused() }
      }
    }
    #expect(handled.all == [0, 1, 2, 3])
    #expect(container.names("claimed") == [])
    let rest = try mailbox.claimPending()
    #expect(rest.map(\.message) == [3, 4, 5])
    // 3 was handed out and failed; 4 was claimed in the batch but never handed out.
    #expect(rest.map(\.deliveryCount) == [2, 1, 1])
  }

  @Test func `A handler may finish its claim itself, and drain leaves it alone`() async throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    for value in 0..<3 { try mailbox.enqueue(value) }
    let handled = Handled()
    try await mailbox.drain { claim in
      handled.append(claim.message)
      try claim.acknowledge()
      if claim.message == 2 { withUnsafeCurrentTask { $0?.cancel() } }
    }
    #expect(handled.all == [0, 1, 2])
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }

  @Test func `An idle drain wakes for a new message and stops when cancelled while waiting`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let (values, continuation) = AsyncStream.makeStream(of: Int.self)
    let task = Task {
      try await mailbox.drain { claim in continuation.yield(claim.message) }
    }
    var iterator = values.makeAsyncIterator()
    try mailbox.enqueue(41)
    #expect(await iterator.next() == 41)
    try mailbox.enqueue(42)
    #expect(await iterator.next() == 42)
    task.cancel()
    try await task.value
    #expect(container.names("claimed") == [])
    #expect(container.names("pending") == [])
  }

  @Test func `An idle drain recovers a claim abandoned by another consumer when its lease ends`()
    async throws
  {
    let container = try TemporaryContainer()
    let limits = AppGroupMailboxLimits(claimTimeout: 0.3)
    let holder: AppGroupMailbox<Int> = try container.mailbox(Int.self, limits: limits)
    let consumer: AppGroupMailbox<Int> = try container.mailbox(Int.self, limits: limits)
    try holder.enqueue(5)
    let abandoned = try holder.claimPending()
    #expect(abandoned.map(\.message) == [5])
    let (values, continuation) = AsyncStream.makeStream(of: [Int].self)
    let task = Task {
      try await consumer.drain { claim in
        continuation.yield([claim.message, claim.deliveryCount])
      }
    }
    var iterator = values.makeAsyncIterator()
    #expect(await iterator.next() == [5, 2])
    task.cancel()
    try await task.value
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try abandoned[0].acknowledge() }
    #expect(container.names("claimed") == [])
  }

  @Test func `Blocking wait says whether anything may be pending`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    #expect(try mailbox.wait(timeout: 0) == false)
    #expect(try mailbox.wait(timeout: 0.01) == false)
    try mailbox.enqueue(1)
    #expect(try mailbox.wait(timeout: nil) == true)
    let claims = try mailbox.claimPending()
    #expect(try mailbox.wait(timeout: 0) == false)
    try claims[0].release()
    #expect(try mailbox.wait(timeout: 0) == true)
  }

  @Test func `A closed watcher ends its waits and its sequence`() async throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try mailbox.enqueue(1)
    let watcher = try mailbox.wakeUps()
    var iterator = watcher.makeAsyncIterator()
    #expect(try await iterator.next() != nil)
    let ended = Task { try await iterator.next() == nil }
    watcher.close()
    #expect(try await ended.value)
    #expect(try Self.blockingWait(watcher) == false)
    #expect(watcher.isPolling == false)
  }

  /// The blocking wait, which async code may not call directly (`noasync`); a closed watcher
  /// returns at once.
  static func blockingWait(_ watcher: AppGroupMailboxWatcher) throws -> Bool {
    try watcher.wait(timeout: nil)
  }

  @Test func `An enqueue that wrote nothing does not post the notification name`() throws {
    let container = try TemporaryContainer()
    let mailbox = try AppGroupMailbox<Int>(
      containerURL: container.url, namespace: "jobs", notificationName: "ready")
    let file = container.url.appendingPathComponent("AppGroupMailbox/@notify/ready").path
    let id = UUID()
    try mailbox.enqueue(1, id: id)
    #expect(FileManager.default.fileExists(atPath: file))
    // Date the file in 2001; only a post would move it to now.
    let old = Date(timeIntervalSince1970: 1_000_000_000)
    try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file)
    try mailbox.enqueue(1, id: id)
    let after = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
    #expect(after == old)
    try mailbox.enqueue(2)
    let posted = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
    #expect(posted.map { $0 > old } == true)
  }

  @Test func `Invalid notification names and polling intervals are rejected`() throws {
    let container = try TemporaryContainer()
    #expect(throws: AppGroupMailboxError.invalidLimit("notificationName")) {
      _ = try AppGroupMailbox<Int>(
        containerURL: container.url, namespace: "jobs", notificationName: "")
    }
    #expect(throws: AppGroupMailboxError.invalidLimit("pollingInterval")) {
      _ = try AppGroupMailboxWatcher(
        notificationName: "n", containerURL: container.url, pollingInterval: 0)
    }
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    #expect(throws: AppGroupMailboxError.invalidLimit("pollingInterval")) {
      _ = try mailbox.wakeUps(pollingInterval: -1)
    }
    #expect(container.names("pending") == [])
  }
}
