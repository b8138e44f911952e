import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Abandoned claims, stale holders, renew, delivery counts (issue semantics 5; case C03 with an
/// injected clock).
@Suite struct RecoveryTests {
  enum Trigger: String, CaseIterable, Sendable {
    case enqueue, claim, maintenance
  }

  @Test(arguments: Trigger.allCases)
  func `A claim older than claimTimeout is restored in its original position by the next operation`(
    trigger: Trigger
  ) throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 10), clock: clock, diagnostics: diagnostics)
    let a = try mailbox.enqueue("A")
    clock.advance(1)
    try mailbox.enqueue("B")
    let original = container.pendingNames()[0]
    let stale = try mailbox.claimPending(limit: 1)
    #expect(stale.map(\.message) == ["A"])
    clock.advance(10.000_001)
    switch trigger {
    case .enqueue: try mailbox.enqueue("C")
    case .claim: #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["A"])
    case .maintenance: try mailbox.performMaintenance()
    }
    #expect(diagnostics.count(.abandonedClaimRecovered) == 1)
    if trigger != .claim {
      #expect(container.claimedNames().isEmpty)
      #expect(container.pendingNames()[0].key == original.key)
      #expect(container.pendingNames()[0].id == a)
      #expect(container.pendingNames()[0].attempts == 1)
    }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try stale[0].acknowledge() }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try stale[0].release() }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try stale[0].renew() }
    if trigger != .claim {
      let again = try mailbox.claimPending(limit: 1)
      #expect(again.map(\.message) == ["A"])
      #expect(again.map(\.deliveryCount) == [2])
    }
  }

  @Test func `A lease that ran out just after the last sweep is still recovered by the next claim`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 10), clock: clock)
    try mailbox.enqueue("A")
    let stale = try mailbox.claimPending()
    clock.advance(9.8)
    #expect(try mailbox.claimPending().isEmpty)
    clock.advance(0.4)
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["A"])
    #expect(again.map(\.deliveryCount) == [2])
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try stale[0].acknowledge() }
  }

  /// A claim made with the longest claim timeout a moment after another process's sweep read its
  /// clock carries a lease just past that sweep's now + 366 days: it is live, not forged (found by
  /// an adversarial review; modelled with two clocks 1 ms apart).
  @Test func `A live claim with the longest claim timeout is not recovered`() throws {
    let container = try TemporaryContainer()
    let sweeperClock = FakeClock()
    let holderClock = FakeClock(start: sweeperClock.now.addingTimeInterval(0.001))
    let holder: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: AppGroupMailboxLimits.claimTimeoutCeiling), clock: holderClock)
    let sweeper: AppGroupMailbox<String> = try container.mailbox(clock: sweeperClock)
    try holder.enqueue("A")
    let held = try holder.claimPending()
    #expect(held.map(\.message) == ["A"])
    try sweeper.performMaintenance()
    #expect(try sweeper.claimPending().isEmpty)
    try #require(held.first).acknowledge()
  }

  @Test func `A lease ending past the longest claim timeout is forged: maintenance recovers it`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2, claimTimeout: AppGroupMailboxLimits.claimTimeoutCeiling),
      clock: clock)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let held = try mailbox.claimPending()
    #expect(held.map(\.message) == ["A", "B"])
    // B's lease is moved to 2286, as a planted or corrupted name would have it.
    let claimed = container.area("claimed")
    let forged = try #require(container.claimedNames().first { $0.message.key.sequence == 2 })
    let far = ClaimedName(message: forged.message, token: 7, leaseUntilMicros: MessageKey.maxMicros)
    #expect(
      rename(
        claimed.appendingPathComponent(forged.fileName).path,
        claimed.appendingPathComponent(far.fileName).path) == 0)
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("C") }
    clock.advance(1)
    try mailbox.performMaintenance()
    // A's lease of the longest timeout stands; B's is taken back and B delivered again.
    #expect(container.claimedNames().map(\.message.key.sequence) == [1])
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["B"])
    #expect(again.map(\.deliveryCount) == [2])
    try held[0].acknowledge()
    try again[0].acknowledge()
    try mailbox.enqueue("C")
  }

  @Test
  func `C03: a slow holder's late acknowledge and release fail and leave the new claim alone`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(claimTimeout: 2)
    let first: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    let second: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    try first.enqueue("A")
    let slow = try first.claimPending()
    // Consumer 2 polls every half second and gets A once the 2 s lease ran out.
    var polls: [[String]] = []
    for _ in 0..<6 {
      clock.advance(0.5)
      polls.append(try second.claimPending().map(\.message))
    }
    #expect(polls == [[], [], [], [], ["A"], []])
    let current = try #require(container.claimedNames().first)
    clock.advance(3)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try slow[0].acknowledge() }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try slow[0].release() }
    #expect(container.claimedNames() == [current])
    #expect(container.names("pending") == [])
  }

  @Test func `C03: a holder renewing every second is never redelivered`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(claimTimeout: 2)
    let first: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    let second: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    try first.enqueue("A")
    let held = try first.claimPending()
    for _ in 0..<10 {
      clock.advance(0.5)
      #expect(try second.claimPending().isEmpty)
      clock.advance(0.5)
      try held[0].renew()
      #expect(try second.claimPending().isEmpty)
      try second.performMaintenance()
    }
    #expect(container.claimedNames().map(\.leaseUntilMicros) == [micros(clock.now) + 2_000_000])
    try held[0].acknowledge()
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }

  @Test func `C03: A is gone exactly once after the new holder acknowledges`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(claimTimeout: 2)
    let first: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    let second: AppGroupMailbox<String> = try container.mailbox(limits: limits, clock: clock)
    try first.enqueue("A")
    try first.enqueue("B")
    let slow = try first.claimPending(limit: 1)
    clock.advance(2.5)
    let fresh = try second.claimPending(limit: 1)
    #expect(fresh.map(\.message) == ["A"])
    #expect(fresh.map(\.deliveryCount) == [2])
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try slow[0].acknowledge() }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try slow[0].release() }
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try slow[0].renew() }
    try fresh[0].acknowledge()
    #expect(try second.claimPending().map(\.message) == ["B"])
    try container.expectDepth(1)
  }

  @Test func `renew starts a fresh lease from now`() throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 10), clock: clock, diagnostics: diagnostics)
    try mailbox.enqueue("A")
    let claim = try mailbox.claimPending()
    clock.advance(8)
    try claim[0].renew()
    let renewedAt = micros(clock.now)
    #expect(container.claimedNames().map(\.leaseUntilMicros) == [renewedAt + 10_000_000])
    clock.advance(8)
    try mailbox.performMaintenance()
    #expect(container.claimedNames().count == 1)
    #expect(diagnostics.count(.abandonedClaimRecovered) == 0)
    clock.advance(2.000_001)
    try mailbox.performMaintenance()
    #expect(container.claimedNames().isEmpty)
    #expect(container.pendingNames().count == 1)
    #expect(diagnostics.count(.abandonedClaimRecovered) == 1)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim[0].renew() }
  }

  @Test func `deliveryCount is 1, then 2 after a release, then 3 after a recovery`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 5), clock: clock)
    let id = try mailbox.enqueue("A")
    let first = try mailbox.claimPending()
    #expect(first.map(\.deliveryCount) == [1])
    try first[0].release()
    let second = try mailbox.claimPending()
    #expect(second.map(\.deliveryCount) == [2])
    clock.advance(6)
    let third = try mailbox.claimPending()
    #expect(third.map(\.deliveryCount) == [3])
    #expect([first, second, third].map { $0[0].id } == [id, id, id])
    #expect(container.claimedNames().map(\.message.attempts) == [3])
  }

  @Test func `A claim's methods throw mailboxDeallocated after its mailbox is released`() throws {
    let container = try TemporaryContainer()
    var mailbox: AppGroupMailbox<String>? = try container.mailbox(clock: FakeClock())
    try mailbox!.enqueue("A")
    try mailbox!.enqueue("B")
    let claims = try mailbox!.claimPending()
    weak let weakMailbox = mailbox
    mailbox = nil
    #expect(weakMailbox == nil)
    #expect(throws: AppGroupMailboxError.mailboxDeallocated) { try claims[0].acknowledge() }
    #expect(throws: AppGroupMailboxError.mailboxDeallocated) { try claims[0].release() }
    #expect(throws: AppGroupMailboxError.mailboxDeallocated) { try claims[1].renew() }
    #expect(container.claimedNames().count == 2)
  }
}
