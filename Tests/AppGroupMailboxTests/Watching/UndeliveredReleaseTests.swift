import Foundation
import Testing

@testable import AppGroupMailbox

/// A claim that was never handed to the code that handles it (the rest of a drain's batch when a
/// handler fails or the task is cancelled, or a claim a caller gives back unread with
/// ``AppGroupMailboxClaimBase/releaseUndelivered()``) goes back without counting a delivery:
/// with `maxDeliveryAttempts`, a message no handler ever had is never made a dead letter.
@Suite struct UndeliveredReleaseTests {
  struct Refused: Error {}

  @Test func `A failing handler with one delivery allowed dead-letters only its own message`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxDeliveryAttempts: 1))
    for value in 0..<4 { try mailbox.enqueue(value) }
    await #expect(throws: Refused.self) {
      try await mailbox.drainPending(batchSize: 4) { claim in
        if claim.message == 1 { throw Refused() }
      }
    }
    // 0 was handled; 1 was delivered once and failed; 2 and 3 no handler ever had.
    let rest = try mailbox.claimPending()
    #expect(rest.map(\.message) == [2, 3])
    #expect(rest.map(\.deliveryCount) == [1, 1])
    #expect(container.names("quarantine").count == 1)
    #expect(container.names("quarantine").allSatisfy { $0.contains("deadletter") })
  }

  @Test func `releaseUndelivered puts a claim back with the count it had, as a putBack`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxDeliveryAttempts: 1))
    try mailbox.enqueue("A")
    let pendingBefore = container.names("pending")
    let claim = try #require(try mailbox.claimPending().first)
    #expect(claim.deliveryCount == 1)
    try claim.releaseUndelivered()
    #expect(container.names("pending") == pendingBefore)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim.releaseUndelivered() }
    let again = try #require(try mailbox.claimPending().first)
    #expect(again.message == "A")
    #expect(again.deliveryCount == 1)
  }

  @Test func `releaseUndelivered of a renewed claim restores the count from before the claim`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupRawMailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let first = try #require(try mailbox.claimPending().first)
    try first.release()  // a delivery that counts
    let second = try #require(try mailbox.claimPending().first)
    #expect(second.deliveryCount == 2)
    try second.renew()
    try second.releaseUndelivered()
    #expect(try mailbox.claimPending().first?.deliveryCount == 2)
  }
}
