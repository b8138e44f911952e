import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// A drain's batch waits while earlier handlers run: a claim whose lease ran out meanwhile may
/// have been recovered and handled by another consumer, so drain never hands it out, and a claim
/// past half its lease is renewed before its handler gets it.
@Suite struct DrainLeaseTests {
  @Test func `Drain skips claims another consumer recovered while earlier handlers ran`()
    async throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(claimTimeout: 10)
    let first: AppGroupMailbox<Int> = try container.mailbox(Int.self, limits: limits, clock: clock)
    let second: AppGroupMailbox<Int> = try container.mailbox(Int.self, limits: limits, clock: clock)
    for value in 0..<3 { try first.enqueue(value) }
    let handled = DrainAndWaitTests.Handled()
    try await first.drainPending(batchSize: 3) { claim in
      handled.append(claim.message)
      guard claim.message == 0 else { return }
      clock.advance(11)  // every lease of the batch ran out
      try claim.renew()  // this handler keeps its own
      let recovered = try second.claimPending()
      #expect(recovered.map(\.message) == [1, 2])
      for claim in recovered { try claim.acknowledge() }
    }
    #expect(handled.all == [0])
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }

  @Test func `Drain renews a waiting claim past half its lease before handing it out`()
    async throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(claimTimeout: 10), clock: clock)
    for value in 0..<3 { try mailbox.enqueue(value) }
    let start = micros(clock)
    let leases = Locked<[Int64]>([])
    try await mailbox.drainPending(batchSize: 3) { claim in
      leases.withLock { $0.append(claim.core.leaseUntilMicros ?? 0) }
      if claim.message == 0 { clock.advance(4) }  // 6 s left: kept as it is
      if claim.message == 1 { clock.advance(2) }  // 4 s left: renewed
    }
    let expected: [Int64] = [start + 10_000_000, start + 10_000_000, start + 16_000_000]
    #expect(leases.withLock { $0 } == expected)
    #expect(container.names("claimed") == [])
  }

  /// "A consumer never delivers a message older than its lifetime by its header" (FORMAT.md): a
  /// slow first handler lets the rest of the batch outlive its lifetime before it is handed out
  /// (found by an adversarial review).
  @Test func `Drain does not hand out a message that outlived its lifetime in the batch`()
    async throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 10), clock: clock, diagnostics: recorder)
    try mailbox.enqueue("first")
    try mailbox.enqueue("second")
    let handled = Locked<[String]>([])
    try await mailbox.drainPending(batchSize: 16) { claim in
      handled.withLock { $0.append(claim.message) }
      clock.advance(30)  // a slow handler
    }
    #expect(handled.withLock { $0 } == ["first"])
    #expect(recorder.count(.expiredMessageRemoved) == 1)
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }
}
