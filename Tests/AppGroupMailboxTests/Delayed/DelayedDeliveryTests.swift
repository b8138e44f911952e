import Foundation
import Testing

@testable import AppGroupMailbox

@Suite struct DelayedDeliveryTests {
  let start = Date(timeIntervalSince1970: 1_767_225_600)

  @Test
  func
    `A delayed message waits outside pending, counts toward the bound, and joins the line at its due time`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), clock: clock)
    try mailbox.enqueue("A", delay: 10)
    try mailbox.enqueue("B")
    #expect(container.names("pending").count == 1)
    #expect(container.names("delayed").count == 1)
    let first = try mailbox.claimPending()
    #expect(first.map(\.message) == ["B"])
    #expect(container.names("pending") == [])
    try mailbox.enqueue("C")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("D") }
    try first[0].acknowledge()
    clock.advance(9.999)
    let early = try mailbox.claimPending()
    #expect(early.map(\.message) == ["C"])
    #expect(try mailbox.nextDueDate() == start.addingTimeInterval(10))
    clock.advance(0.001)
    try mailbox.enqueue("E")
    let due = try mailbox.claimPending()
    #expect(due.map(\.message) == ["A", "E"])
    #expect(due[0].enqueuedAt == start)
    #expect(due[0].deliveryCount == 1)
    #expect(try mailbox.nextDueDate() == nil)
    #expect(container.names("delayed") == [])
  }

  @Test func `A message released with a delay returns to its original place when due`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    for value in ["A", "B", "C"] { try mailbox.enqueue(value) }
    let a = try #require(try mailbox.claimPending(limit: 1).first)
    try a.release(retryAfter: 30)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try a.acknowledge() }
    let others = try mailbox.claimPending()
    #expect(others.map(\.message) == ["B", "C"])
    for claim in others { try claim.release() }
    clock.advance(29)
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["B"])
    clock.advance(1)
    let all = try mailbox.claimPending()
    #expect(all.map(\.message) == ["A", "C"])
    #expect(all.map(\.deliveryCount) == [2, 2])
  }

  @Test func `Lifetime counts from enqueuedAt for delayed and retried messages`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 100), clock: clock, diagnostics: diagnostics)
    // Due past its lifetime: expires at once, nothing written.
    try mailbox.enqueue("too late", delay: 100)
    #expect(container.names("delayed") == [] && container.names("tmp") == [])
    #expect(diagnostics.all == [.expiredMessageRemoved])
    // Due inside its lifetime, claimed after it: expired at the claim.
    try mailbox.enqueue("late claim", delay: 80)
    // Released with a delay past its lifetime: expired when due.
    try mailbox.enqueue("retried")
    try #require(try mailbox.claimPending().first).release(retryAfter: 150)
    clock.advance(110)
    #expect(try mailbox.claimPending().isEmpty)
    clock.advance(40)
    #expect(try mailbox.claimPending().isEmpty)
    #expect(diagnostics.count(.expiredMessageRemoved) == 3)
    #expect(container.names("delayed") == [] && container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }

  @Test func `A message claimed maxDeliveryAttempts times goes to quarantine even with delays`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxDeliveryAttempts: 2), clock: clock, diagnostics: diagnostics)
    try mailbox.enqueue("poison")
    for expected in 1...2 {
      let claim = try #require(try mailbox.claimPending().first)
      #expect(claim.deliveryCount == expected)
      try claim.release(retryAfter: 5)
      clock.advance(5)
    }
    #expect(try mailbox.claimPending().isEmpty)
    #expect(diagnostics.all == [.deadLetterQuarantined])
    #expect(container.names("quarantine").count == 1)
    #expect(container.names("quarantine").first?.contains("-deadletter-") == true)
  }

  @Test func `The due time lives in the file name and survives reopening`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let id = UUID()
    do {
      let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
      try mailbox.enqueue("later", id: id, notBefore: start.addingTimeInterval(60))
      try mailbox.enqueue("again", id: id, notBefore: start.addingTimeInterval(60))
    }
    let names = container.names("delayed")
    #expect(names.count == 1)
    let name = try #require(names.first.flatMap { DelayedName(parsing: $0) })
    #expect(name.dueMicros == Int64(start.timeIntervalSince1970 + 60) * 1_000_000)
    #expect(name.message.id == id)
    clock.advance(60)
    let reopened: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    #expect(try reopened.claimPending().map(\.id) == [id])
  }

  @Test func `Any process makes due messages pending`() throws {
    let container = try TemporaryContainer()
    let mailbox = try AppGroupMailbox<Int>(containerURL: container.url, namespace: "jobs")
    try mailbox.enqueue(7, delay: 0.3)
    var delivered: [String] = []
    let done = try waitUntil(deadline: 30) {
      delivered += try Processes.runWorker(["consume", container.url.path, "jobs"]).lines
      return !delivered.isEmpty
    }
    #expect(done)
    #expect(delivered == ["7"])
  }
}

@Suite struct RetryPolicyTests {
  @Test func `Delays grow by the multiplier up to the cap`() {
    let policy = AppGroupMailboxRetryPolicy(
      baseDelay: 1, multiplier: 2, maximumDelay: 10, jitter: 0)
    #expect((1...6).map { policy.delay(afterDelivery: $0) } == [1, 2, 4, 8, 10, 10])
  }

  @Test func `Jitter stays within its fraction and never passes the cap`() {
    let policy = AppGroupMailboxRetryPolicy(
      baseDelay: 4, multiplier: 3, maximumDelay: 100, jitter: 0.25)
    var generator = SeededGenerator(seed: 42)
    for count in 1...50 {
      let nominal = policy.nominalDelay(afterDelivery: count)
      let delay = policy.delay(afterDelivery: count, using: &generator)
      #expect(delay >= nominal * 0.75 && delay <= min(100, nominal * 1.25))
    }
  }

  @Test func `Out-of-range settings are clamped`() {
    let policy = AppGroupMailboxRetryPolicy(
      baseDelay: -1, multiplier: 0.5, maximumDelay: .infinity, jitter: 3)
    #expect(
      policy == AppGroupMailboxRetryPolicy(baseDelay: 0, multiplier: 1, maximumDelay: 0, jitter: 1))
  }
}
