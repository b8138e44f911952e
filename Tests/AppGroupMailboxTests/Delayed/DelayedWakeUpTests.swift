import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// A consumer waiting for wake-ups wakes by itself when a delayed message becomes due.
@Suite struct DelayedWakeUpTests {
  @Test func `wait(timeout:) returns true when a delayed message becomes due`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("later", delay: 0.3)
    #expect(try mailbox.claimPending().isEmpty)
    let started = Date()
    // 30 s is a correctness bound (a missed wake-up), not a timing assertion.
    #expect(try mailbox.wait(timeout: 30))
    #expect(Date().timeIntervalSince(started) < 30)
    #expect(try mailbox.claimPending().map(\.message) == ["later"])
  }

  @Test func `wait(timeout:) still times out when the due time lies beyond it`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("much later", delay: 3_600)
    #expect(try mailbox.wait(timeout: 0.05) == false)
    #expect(try mailbox.claimPending().isEmpty)
  }

  @Test func `An idle drain delivers a delayed message when it becomes due`() async throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("now")
    try mailbox.enqueue("later", delay: 0.3)
    let delivered = Locked<[String]>([])
    let drain = Task {
      try await mailbox.drain { claim in delivered.withLock { $0.append(claim.message) } }
    }
    // A generous bound: long synchronous tests running in parallel can hold every cooperative
    // thread for minutes on a 2-core machine under a sanitizer; a hang still fails.
    let done = await waitUntilAsync(deadline: 900) { delivered.withLock { $0.count == 2 } }
    drain.cancel()
    _ = try? await drain.value
    #expect(done)
    #expect(delivered.withLock { $0 } == ["now", "later"])
  }
}

/// `waitUntil` for async tests: polls `condition` until it holds or `deadline` seconds pass.
func waitUntilAsync(deadline: TimeInterval, _ condition: () -> Bool) async -> Bool {
  let limit = Date().addingTimeInterval(deadline)
  while Date() < limit {
    if condition() { return true }
    try? await Task.sleep(nanoseconds: 1_000_000)
  }
  return condition()
}
