import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Attacks on the depth bound (reviewer, branch adv): the counter in `state` must never sit
/// below the messages it counted, or enqueues pass `maxMessages`.
@Suite struct DepthBoundAttackTests {
  @Test func `A requeue whose state write fails leaves no message the counter missed`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(maxMessages: 2)
    // A message a consumer of another payload type quarantines (malformed).
    let producer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self,
      limits: limits, messageType: "Job", clock: clock)
    try producer.enqueue(1)
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: limits, messageType: "Job", clock: clock)
    #expect(try mailbox.claimPending().isEmpty)
    let quarantined = try #require(try mailbox.inspector.entries(in: [.quarantined]).first)
    // The requeue's rename into pending/ succeeds; the write of the raised counter fails (EIO).
    let (thrown, unfired) = thrownError(under: [.init(call: "pwrite", errno: EIO)]) {
      _ = try mailbox.inspector.requeueQuarantined(quarantined.fileName)
    }
    #expect(unfired.isEmpty)
    #expect(thrown != nil)
    // Whatever the requeue reported, every message on disk must be counted: two more enqueues
    // through the library may not both be admitted under maxMessages 2.
    let pendingAfterRequeue = container.names("pending").count
    var admitted = 0
    for text in ["a", "b"] {
      do {
        try mailbox.enqueue(text)
        admitted += 1
      } catch AppGroupMailboxError.mailboxFull {}
    }
    #expect(pendingAfterRequeue + admitted <= 2, "pending: \(container.names("pending"))")
    #expect(container.names("pending").count <= 2)
  }
}
