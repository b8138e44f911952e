import Foundation
import Testing

@testable import AppGroupMailbox

/// The durability protocol of every operation, from the recorded sequence of mutating system
/// calls (a process crash keeps the page cache, so only the order of writes, renames and flushes
/// shows what a power cut could lose). Enqueue, release and recovery are in DurabilityTests.
@Suite struct DurabilityProtocolTests {
  func trace(_ mailbox: AppGroupMailbox<String>, _ body: () throws -> Void) throws -> [String] {
    try DurabilityTests.trace(mailbox.spool, body)
  }

  @Test func `A claim only renames; acknowledge only unlinks; renew renames`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    try mailbox.enqueue("A")
    _ = try mailbox.claimPending(limit: 1).first.map { try $0.release() }
    var claim: AppGroupMailbox<String>.Claim?
    let claimed = try trace(mailbox) { claim = try mailbox.claimPending(limit: 1).first }
    #expect(claimed == ["renameat2 pending -> claimed"])
    let held = try #require(claim)
    #expect(try trace(mailbox) { try held.renew() } == ["renameat2 claimed -> claimed"])
    #expect(try trace(mailbox) { try held.acknowledge() } == ["unlinkat claimed"])
  }

  @Test func `A delayed enqueue and a delayed release flush delayed; promotion flushes pending`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("warm-up")
    let delayed = try trace(mailbox) { try mailbox.enqueue("later", delay: 5) }
    #expect(
      delayed == [
        "openat tmp O_CREAT", "write file", "fsync file", "pwrite state",
        "renameat2 tmp -> delayed", "fsync delayed",
      ])
    let claim = try #require(try mailbox.claimPending(limit: 1).first)
    let released = try trace(mailbox) { try claim.release(retryAfter: 5) }
    #expect(released == ["renameat2 claimed -> delayed", "fsync delayed"])
    clock.advance(5)
    let promoted = try trace(mailbox) { try mailbox.performMaintenance() }
    #expect(
      Array(promoted.prefix(3)) == [
        "renameat2 delayed -> pending", "renameat2 delayed -> pending", "fsync pending",
      ])
  }

  @Test
  func `Quarantine moves the entry without writing to it; discardOldest unlinks under the lock`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 1), overflowPolicy: .discardOldest, clock: FakeClock())
    try mailbox.enqueue("A")
    let evicting = try trace(mailbox) { try mailbox.enqueue("B") }
    #expect(
      evicting == [
        "openat tmp O_CREAT", "write file", "fsync file", "unlinkat pending", "pwrite state",
        "renameat2 tmp -> pending", "fsync pending",
      ])
    let name = try #require(container.names("pending").first)
    try Data("{torn".utf8).write(to: container.area("pending").appendingPathComponent(name))
    let quarantined = try trace(mailbox) { _ = try mailbox.claimPending() }
    #expect(quarantined.first == "renameat2 pending -> claimed")
    #expect(quarantined.contains("renameat2 claimed -> quarantine"))
    #expect(!quarantined.contains { $0.hasPrefix("write") || $0.hasPrefix("ftruncate") })
  }

  @Test func `No operation ever writes to a published message file`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3, claimTimeout: 5), overflowPolicy: .discardOldest,
      clock: clock)
    let calls = try trace(mailbox) {
      for value in ["A", "B", "C", "D"] { try mailbox.enqueue(value) }
      try mailbox.enqueue("E", id: UUID(), enqueuedAt: clock.now.addingTimeInterval(-1))
      let claims = try mailbox.claimPending()
      try claims[0].acknowledge()
      try claims[1].release()
      try claims[2].release(retryAfter: 1)
      _ = try mailbox.claimPending()
      clock.advance(10)
      try mailbox.performMaintenance()
      _ = try mailbox.claimPending()
    }
    // Writes go only to a file just created in tmp/ ("file") or to the state file.
    let writes = calls.filter {
      $0.hasPrefix("write") || $0.hasPrefix("pwrite") || $0.hasPrefix("ftruncate")
    }
    #expect(!writes.isEmpty)
    #expect(writes.allSatisfy { $0 == "write file" || $0 == "pwrite state" })
    // Every publication into pending/ or delayed/ from tmp/ is followed by a flush of that area
    // before the next operation's first call.
    for (index, call) in calls.enumerated() where call.hasPrefix("renameat2 tmp -> ") {
      let area = String(call.dropFirst("renameat2 tmp -> ".count))
      #expect(calls[index + 1] == "fsync \(area)")
    }
  }
}
