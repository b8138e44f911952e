import AppGroupMailbox
import Foundation
import MailboxLocks
import Testing

/// ``AppGroupMailboxEvents`` iterated in the process that makes the changes: the order of one
/// message's events, a release's due time, and the end of the sequence on close.
@Suite struct LifecycleEventsTests {
  @Test
  func `The sequence yields one message's events in order, a delayed release with its due time`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let events = try mailbox.inspector.events()
    // Armed: the changes made now are all seen, read below.
    let id = try mailbox.enqueue(Data("[]".utf8)).id
    try #require(try mailbox.claimPending(limit: 1).first).release(retryAfter: 60)
    // The deadline closes the sequence, which ends the loop below however many events came.
    let deadline = UInt64(WatchSupport.wakeDeadlineMicros) * 1_000
    let watchdog = Task {
      try await Task.sleep(nanoseconds: deadline)
      events.close()
    }
    let seen = Locked<[AppGroupMailboxEvent]>([])
    for try await event in events {
      seen.withLock { $0.append(event) }
      if seen.withLock({ $0.count }) == 3 { break }
    }
    watchdog.cancel()
    let kinds = seen.withLock { $0.map(\.kind) }
    #expect(kinds == [.enqueued, .claimed, .released])
    #expect(seen.withLock { $0.map(\.id) } == [id, id, id])
    let released = try #require(seen.withLock { $0.last })
    let due = try #require(released.dueAt)
    #expect(due.timeIntervalSince(released.date) > 59 && due.timeIntervalSince(released.date) <= 60)
  }
}
