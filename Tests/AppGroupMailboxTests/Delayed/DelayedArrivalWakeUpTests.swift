import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// A waiting consumer learns of a delayed message that arrives while it waits (a delayed
/// enqueue or a release with a delay, in any process), so it can sleep until that due time.
@Suite struct DelayedArrivalWakeUpTests {
  @Test func `A delayed enqueue and a release with a delay wake a waiting watcher`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let watcher = try mailbox.wakeUps()
    defer { watcher.close() }
    #expect(try watcher.wait(timeout: 0) == false)
    try mailbox.enqueue("later", delay: 3_600)
    // 30 s is a correctness bound (a missed wake-up), not a timing assertion.
    #expect(try watcher.wait(timeout: 30))
    #expect(try mailbox.claimPending().isEmpty)
    try mailbox.enqueue("now")
    #expect(try watcher.wait(timeout: 30))
    let claim = try #require(try mailbox.claimPending().first)
    #expect(try watcher.wait(timeout: 0) == false)
    try claim.release(retryAfter: 3_600)
    #expect(try watcher.wait(timeout: 30))
  }

  @Test func `A polling watcher wakes when an earlier due time appears, not at its first scan`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("already waiting", delay: 3_600)
    let target = PendingAreaTarget(directories: mailbox.spool.directories)
    #expect(target.scan() == .scanned(found: false))
    #expect(target.scan() == .scanned(found: false))
    try mailbox.enqueue("sooner", delay: 60)
    #expect(target.scan() == .scanned(found: true))
    #expect(target.scan() == .scanned(found: false))
    try mailbox.enqueue("pending")
    #expect(target.scan() == .scanned(found: true))
  }

  @Test func `An idle drain delivers a delayed message enqueued while it waits`() async throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    let delivered = Locked<[String]>([])
    let drain = Task {
      try await mailbox.drain { claim in delivered.withLock { $0.append(claim.message) } }
    }
    let idle = await waitUntilAsync(deadline: 900) {
      delivered.withLock { $0.count == 1 } && container.names("claimed").isEmpty
    }
    try mailbox.enqueue("second", delay: 0.2)
    let done = await waitUntilAsync(deadline: 900) { delivered.withLock { $0.count == 2 } }
    drain.cancel()
    _ = try? await drain.value
    #expect(idle && done)
    #expect(delivered.withLock { $0 } == ["first", "second"])
  }
}
