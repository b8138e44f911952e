import Foundation
import Testing

@testable import AppGroupMailbox

/// FIFO by `enqueuedAt`, then insertion order (issue semantics 1 and 2; case C11).
@Suite struct OrderingTests {
  @Test func `An import with an older date goes first and equal dates keep insertion order`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let start = clock.now
    try mailbox.enqueue("a")
    try mailbox.enqueue("b")
    try mailbox.enqueue("old", id: UUID(), enqueuedAt: start.addingTimeInterval(-60))
    try mailbox.enqueue("tie", id: UUID(), enqueuedAt: start)
    try mailbox.enqueue("older-second", id: UUID(), enqueuedAt: start.addingTimeInterval(-60))
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["old", "older-second", "a", "b", "tie"])
    #expect(
      claims.map { micros($0.enqueuedAt) - micros(start) } == [
        -60_000_000, -60_000_000, 0, 0, 0,
      ])
    #expect(claims.map(\.deliveryCount) == [1, 1, 1, 1, 1])
  }

  @Test func `C11a: a thousand enqueues in a tight loop are claimed in enqueue order`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxMessages: 1_000))
    for value in 0..<1_000 { try mailbox.enqueue(value) }
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == Array(0..<1_000))
    #expect(container.pendingNames().isEmpty)
    #expect(container.claimedNames().map(\.message.key.sequence).sorted() == Array(1...1_000))
  }

  @Test func `C11b: after the clock steps back an hour B stays after A and A is discarded first`()
    throws
  {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    // Created with the bound and policy the second opener uses: they are stored.
    let first: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: clock)
    let a = try first.enqueue("A")
    let aTime = micros(clock.now)
    clock.advance(-3_600)
    let b = try first.enqueue("B")
    // B's enqueuedAt is clamped to the newest implicit time, A's.
    #expect(container.pendingNames().map(\.id) == [a, b])
    #expect(container.pendingNames().map(\.key.micros) == [aTime, aTime])
    let bounded: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: clock,
      diagnostics: diagnostics)
    let c = try bounded.enqueue("C")
    #expect(diagnostics.all == [.oldestMessageDiscarded])
    #expect(container.pendingNames().map(\.id) == [b, c])
    #expect(container.pendingNames().map(\.key.sequence) == [2, 3])
    let claims = try bounded.claimPending()
    #expect(claims.map(\.message) == ["B", "C"])
    #expect(claims.map { micros($0.enqueuedAt) } == [aTime, aTime])
  }

  @Test func `An explicit date is taken as given even when the clock stepped back`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    let aTime = micros(clock.now)
    clock.advance(-3_600)
    try mailbox.enqueue("import", id: UUID(), enqueuedAt: clock.now)
    try mailbox.enqueue("B")
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["import", "A", "B"])
    #expect(claims.map { micros($0.enqueuedAt) } == [aTime - 3_600_000_000, aTime, aTime])
  }

  @Test func `The clamp holds across mailbox instances and processes through the state file`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    // Created with the bound and policy the second opener uses: they are stored.
    let first: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: clock)
    try first.enqueue("A")
    let aTime = micros(clock.now)
    clock.advance(-10)
    let second: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try second.enqueue("B")
    #expect(container.pendingNames().map(\.key.micros) == [aTime, aTime])
    #expect(container.counters()?.newestImplicitMicros == aTime)
    #expect(try second.claimPending().map(\.message) == ["A", "B"])
  }

  @Test func `C11c: a released message comes back first`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    for message in ["A", "B", "C"] {
      try mailbox.enqueue(message)
      clock.advance(1)
    }
    let first = try mailbox.claimPending(limit: 1)
    #expect(first.map(\.message) == ["A"])
    try first[0].release()
    let again = try mailbox.claimPending(limit: 1)
    #expect(again.map(\.message) == ["A"])
    #expect(again.map(\.deliveryCount) == [2])
    #expect(again[0].id == first[0].id)
    #expect(again[0].enqueuedAt == first[0].enqueuedAt)
    #expect(try mailbox.claimPending().map(\.message) == ["B", "C"])
  }

  @Test func `C11d: imports are placed by their dates and ties keep insertion order`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let start = clock.now
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    try mailbox.enqueue("X", id: UUID(), enqueuedAt: start.addingTimeInterval(-10))
    try mailbox.enqueue("Y", id: UUID(), enqueuedAt: start)
    try mailbox.enqueue("Z", id: UUID(), enqueuedAt: start.addingTimeInterval(-10))
    try mailbox.enqueue("W", id: UUID(), enqueuedAt: start.addingTimeInterval(5))
    clock.advance(1)
    try mailbox.enqueue("C")
    #expect(try mailbox.claimPending().map(\.message) == ["X", "Z", "A", "B", "Y", "C", "W"])
  }

  @Test func `An imported date keeps its exact microsecond through a round trip`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 1_000), clock: clock)
    let dates = (0..<200).map { index in
      Date(timeIntervalSince1970: 1_767_225_600 + Double(index) * 0.000_001 + 0.123_456)
    }
    for (index, date) in dates.enumerated() {
      try mailbox.enqueue(String(index), id: UUID(), enqueuedAt: date)
    }
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == (0..<200).map(String.init))
    #expect(claims.map { micros($0.enqueuedAt) } == dates.map(micros))
    // Re-importing a claim's own enqueuedAt lands on the same microsecond.
    try mailbox.enqueue("again", id: UUID(), enqueuedAt: claims[7].enqueuedAt)
    #expect(container.pendingNames().map(\.key.micros) == [micros(dates[7])])
  }
}
