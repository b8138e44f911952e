import Foundation
import Testing

@testable import AppGroupMailbox

/// Claims count toward `maxMessages`, the overflow policies, and idempotent import (issue
/// semantics 3 and 4; case C13's single-process parts).
@Suite struct BoundsAndImportTests {
  @Test func `Claims count toward maxMessages and rejectNewest writes nothing`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), clock: clock)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let claim = try mailbox.claimPending(limit: 1)
    #expect(claim.map(\.message) == ["A"])
    let pendingBefore = container.names("pending")
    let claimedBefore = container.names("claimed")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("C") }
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try mailbox.enqueue("D", id: UUID(), enqueuedAt: clock.now)
    }
    #expect(container.names("pending") == pendingBefore)
    #expect(container.names("claimed") == claimedBefore)
    #expect(container.names("tmp") == [])
    #expect(container.counters()?.depth == 2)
    #expect(container.counters()?.sequence == 2)
    try claim[0].acknowledge()
    try mailbox.enqueue("C")
    #expect(try mailbox.claimPending().map(\.message) == ["B", "C"])
  }

  @Test func `An acknowledge leaves the depth counter high until a full mailbox recounts`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let producer: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), clock: clock)
    try producer.enqueue("A")
    try producer.enqueue("B")
    // A fresh instance rebuilds the counters on its first lock; its acknowledge writes nothing.
    let consumer: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), clock: clock)
    try consumer.claimPending(limit: 1)[0].acknowledge()
    #expect(container.counters()?.depth == 2)
    // The counter says full: the enqueue recounts (1) and is admitted.
    try producer.enqueue("C")
    #expect(container.counters()?.depth == 2)
    #expect(throws: AppGroupMailboxError.mailboxFull) { try producer.enqueue("D") }
    #expect(container.pendingNames().count == 2)
  }

  /// The spool-state fuzzer's far-time plant (kept seed `1 6 far-time`) once counted 49 worker
  /// messages against a bound of 48: acknowledging a message the counter never counted lowered
  /// it below the messages it did count.
  @Test func `Acknowledging a message placed by hand never lets enqueued messages pass the bound`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), clock: clock)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    #expect(container.counters()?.depth == 2)
    // Placed after the instance counted: older than A, so it is claimed first.
    let id = UUID()
    let older = micros(clock.now) - 1_000_000
    let name = PendingName(key: MessageKey(micros: older, sequence: 0), id: id, attempts: 0)
    try container.plant(
      "pending", name.fileName, messageFile("planted", id: id, enqueuedAt: older))
    let claims = try mailbox.claimPending(limit: 1)
    #expect(claims.map(\.message) == ["planted"])
    try claims[0].acknowledge()
    try mailbox.enqueue("C")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("D") }
    #expect(container.pendingNames().count == 3)
    #expect(container.counters()?.depth == 3)
    #expect(try mailbox.claimPending().map(\.message) == ["A", "B", "C"])
  }

  @Test func `An import dated past the lifetime is not written`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let recorder = DiagnosticRecorder()
    let mailbox = try container.mailbox(
      limits: .init(messageLifetime: 60), clock: clock, diagnostics: recorder)
    let id = UUID()
    try mailbox.enqueue("old", id: id, enqueuedAt: clock.now.addingTimeInterval(-60))
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
    #expect(recorder.all == [.expiredMessageRemoved])
    try mailbox.enqueue("young", id: UUID(), enqueuedAt: clock.now.addingTimeInterval(-59))
    #expect(try mailbox.claimPending().map(\.message) == ["young"])
  }

  @Test func `An expired message removed by a fresh instance is recounted once`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(maxMessages: 2, messageLifetime: 10)
    let producer: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    try producer.enqueue("old")
    clock.advance(11)
    try producer.enqueue("B")
    let consumer: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    #expect(try consumer.claimPending(limit: 1).map(\.message) == ["B"])
    #expect(container.counters()?.depth == 1)
    try producer.enqueue("C")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try producer.enqueue("D") }
  }

  @Test func `discardOldest deletes the oldest pending message and never a claim`() throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), overflowPolicy: .discardOldest, clock: clock,
      diagnostics: diagnostics)
    try mailbox.enqueue("A")
    let b = try mailbox.enqueue("B")
    try mailbox.enqueue("C")
    let claimA = try mailbox.claimPending(limit: 1)
    #expect(claimA.map(\.message) == ["A"])
    try mailbox.enqueue("D")
    #expect(diagnostics.all == [.oldestMessageDiscarded])
    #expect(!container.pendingNames().map(\.id).contains(b))
    #expect(container.pendingNames().count == 2)
    #expect(container.claimedNames().map(\.message.id) == [claimA[0].id])
    try claimA[0].acknowledge()
    #expect(try mailbox.claimPending().map(\.message) == ["C", "D"])
    // The eviction lowered the counter (after its recount); the acknowledge of A left it.
    #expect(container.counters()?.depth == 3)
  }

  @Test func `discardOldest fails with mailboxFull when every message is claimed`() throws {
    let container = try TemporaryContainer()
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: FakeClock(),
      diagnostics: diagnostics)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let claims = try mailbox.claimPending()
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("C") }
    #expect(diagnostics.all == [])
    #expect(container.names("pending") == [])
    #expect(container.names("tmp") == [])
    #expect(container.claimedNames().count == 2)
    for claim in claims { try claim.acknowledge() }
  }

  @Test func `enqueue with an id writes nothing while that id is pending, claimed or quarantined`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let id = UUID()
    #expect(try mailbox.enqueue("first", id: id) == id)
    #expect(try mailbox.enqueue("second", id: id) == id)
    #expect(
      try mailbox.enqueue("third", id: id, enqueuedAt: clock.now.addingTimeInterval(-5)) == id)
    #expect(container.pendingNames().map(\.id) == [id])
    #expect(container.counters()?.sequence == 1)

    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["first"])
    #expect(try mailbox.enqueue("while claimed", id: id) == id)
    #expect(container.names("pending") == [])
    #expect(container.claimedNames().map(\.message.id) == [id])

    // Quarantined: the id is read from the quarantine name alone.
    try claims[0].acknowledge()
    let quarantined = QuarantineName(
      micros: micros(clock.now), reason: .malformed, id: id, nonce: 0xabcd)
    try container.plant("quarantine", quarantined.fileName, Data("junk".utf8))
    #expect(try mailbox.enqueue("while quarantined", id: id) == id)
    #expect(container.names("pending") == [])
    #expect(container.names("tmp") == [])
    // Nothing counted: the acknowledge left the counter at 1 (an upper bound), no enqueue raised it.
    #expect(container.counters()?.depth == 1)
  }

  @Test func `An acknowledged id can be enqueued again because the mailbox keeps no tombstones`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    let id = UUID()
    try mailbox.enqueue("first", id: id)
    try mailbox.claimPending()[0].acknowledge()
    try mailbox.enqueue("again", id: id)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["again"])
    #expect(claims.map(\.id) == [id])
    #expect(claims.map(\.deliveryCount) == [1])
  }

  @Test func `Threads racing to import the same ids store exactly one copy of each`() async throws {
    let container = try TemporaryContainer()
    let ids = (0..<40).map { _ in UUID() }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        // One mailbox instance per task: separate descriptors, so the flock is what excludes.
        let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
        group.addTask {
          for (index, id) in ids.enumerated() { try mailbox.enqueue(index, id: id) }
        }
      }
      try await group.waitForAll()
    }
    #expect(container.pendingNames().map(\.id) == ids)
    #expect(container.counters()?.depth == 40)
  }

  @Test
  func `A negative claim limit throws and a limit of 0 returns nothing; neither changes anything`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    let raw = try AppGroupRawMailbox(containerURL: container.url, namespace: "jobs")
    try mailbox.enqueue("A")
    let before = container.names("pending")
    for limit in [-1, Int.min] {
      #expect(throws: AppGroupMailboxError.invalidLimit("claim limit")) {
        try mailbox.claimPending(limit: limit)
      }
      #expect(throws: AppGroupMailboxError.invalidLimit("claim limit")) {
        try raw.claimPending(limit: limit)
      }
    }
    #expect(try mailbox.claimPending(limit: 0).isEmpty)
    #expect(try raw.claimPending(limit: 0).isEmpty)
    #expect(container.names("pending") == before)
    #expect(container.names("claimed").isEmpty)
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["A"])
  }
}
