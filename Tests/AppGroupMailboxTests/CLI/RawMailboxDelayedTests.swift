import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// The untyped mailbox's delayed delivery, watcher and inspection of delayed messages: the same
/// behaviour as the typed mailbox, on the same spool functions.
@Suite struct RawMailboxDelayedTests {
  let start = Date(timeIntervalSince1970: 1_767_225_600)

  func raw(
    _ container: TemporaryContainer, clock: FakeClock, limits: AppGroupMailboxLimits = .init()
  ) throws -> AppGroupRawMailbox {
    try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", limits: limits,
      overflowPolicy: .rejectNewest, diagnostic: nil, durability: .full,
      permissions: .private, clock: clock.mailboxClock)
  }

  @Test
  func
    `An untyped delayed enqueue waits in delayed, is listed with its due time and joins the line when due`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox = try raw(container, clock: clock, limits: .init(maxMessages: 3))
    let later = try mailbox.enqueue(Data("\"later\"".utf8), delay: 20, messageType: "t")
    #expect(later.notBefore == start.addingTimeInterval(20))
    #expect(!later.wasAlreadyPresent && !later.expiredBeforeDue)
    let soon = try mailbox.enqueue(Data("\"soon\"".utf8), notBefore: start.addingTimeInterval(10))
    let now = try mailbox.enqueue(Data("\"now\"".utf8))
    #expect(now.notBefore == nil)
    #expect(container.names("pending").count == 1)
    #expect(container.names("delayed").count == 2)
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue(Data("4".utf8)) }

    let status = try mailbox.inspector.status()
    #expect(status.pending == 1)
    #expect(status.delayed == 2)
    #expect(status.claimed == 0)
    #expect(status.depth == 3)
    #expect(status.nextDueAt == start.addingTimeInterval(10))
    let sizes = ["pending", "delayed"].flatMap { area in
      container.names(area).map { name in
        (try? Data(contentsOf: container.area(area).appendingPathComponent(name)).count) ?? 0
      }
    }
    #expect(status.bytes == sizes.reduce(0, +))
    let entries = try mailbox.inspector.entries()
    #expect(entries.map(\.id) == [now.id, soon.id, later.id])
    #expect(entries.map(\.state) == [.pending, .delayed, .delayed])
    #expect(
      entries.map(\.dueAt) == [nil, start.addingTimeInterval(10), start.addingTimeInterval(20)])
    #expect(entries.map(\.deliveryCount) == [0, 0, 0])
    // A delayed enqueue's place in line is its due time; its envelope keeps the enqueue time.
    #expect(
      entries.map(\.enqueuedAt) == [
        start, start.addingTimeInterval(10), start.addingTimeInterval(20),
      ])
    #expect(try mailbox.inspector.entries(in: [.delayed]).map(\.id) == [soon.id, later.id])
    let envelope = try #require(try mailbox.inspector.envelope(later.id.uuidString))
    #expect(envelope.entry.state == .delayed)
    #expect(envelope.enqueuedAt == start)
    #expect(envelope.messageType == "t")
    #expect(try mailbox.nextDueDate() == start.addingTimeInterval(10))

    clock.advance(9.999)
    let early = try mailbox.claimPending()
    #expect(early.map(\.id) == [now.id])
    try early[0].acknowledge()
    clock.advance(0.001)
    try mailbox.enqueue(Data("\"after soon\"".utf8))
    clock.advance(10)
    let due = try mailbox.claimPending()
    #expect(
      due.map { String(decoding: $0.payload, as: UTF8.self) } == [
        "\"soon\"", "\"after soon\"", "\"later\"",
      ])
    #expect(due[2].enqueuedAt == start)
    #expect(due[2].messageType == "t")
    #expect(due.map(\.deliveryCount) == [1, 1, 1])
    #expect(try mailbox.nextDueDate() == nil)
    #expect(try mailbox.inspector.status().nextDueAt == nil)
    #expect(container.names("delayed") == [])
  }

  @Test
  func `An untyped claim released with a retry delay waits, then returns to its original place`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox = try raw(container, clock: clock)
    let ids = try ["1", "2", "3"].map { try mailbox.enqueue(Data($0.utf8)).id }
    let first = try #require(try mailbox.claimPending(limit: 1).first)
    try first.release(retryAfter: 30)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try first.acknowledge() }
    let waiting = try #require(try mailbox.inspector.entries(in: [.delayed]).first)
    #expect(waiting.id == ids[0])
    #expect(waiting.deliveryCount == 1)
    #expect(waiting.dueAt == start.addingTimeInterval(30))
    #expect(waiting.enqueuedAt == start)
    let status = try mailbox.inspector.status()
    #expect([status.pending, status.delayed, status.claimed, status.depth] == [Int]([2, 1, 0, 3]))
    #expect(status.nextDueAt == start.addingTimeInterval(30))
    let others = try mailbox.claimPending()
    #expect(others.map(\.id) == [ids[1], ids[2]])
    for claim in others { try claim.release() }
    clock.advance(29.999)
    #expect(try mailbox.claimPending(limit: 1).map(\.id) == [ids[1]])
    clock.advance(0.001)
    let all = try mailbox.claimPending()
    #expect(all.map(\.id) == [ids[0], ids[2]])
    #expect(all.map(\.deliveryCount) == [2, 2])
    // A retry delay of 0 is a plain release.
    try all[0].release(retryAfter: 0)
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.id) == [ids[0]])
  }

  @Test func `An untyped enqueue due past its lifetime is not written and says so`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox = try raw(container, clock: clock, limits: .init(messageLifetime: 100))
    let receipt = try mailbox.enqueue(Data("1".utf8), delay: 100)
    #expect(receipt.expiredBeforeDue)
    #expect(receipt.notBefore == nil)
    #expect(container.names("delayed") == [] && container.names("tmp") == [])
    let past = try mailbox.enqueue(Data("2".utf8), notBefore: start.addingTimeInterval(-5))
    #expect(past.notBefore == nil && !past.expiredBeforeDue)
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.id) == [past.id])
    let id = UUID()
    #expect(try mailbox.enqueue(Data("3".utf8), id: id, delay: 5).wasAlreadyPresent == false)
    #expect(try mailbox.enqueue(Data("3".utf8), id: id, delay: 5).wasAlreadyPresent == true)
    #expect(try mailbox.enqueue(Data("3".utf8), id: id).wasAlreadyPresent == true)
    #expect(container.names("delayed").count == 1)
  }

  @Test func `Requeue leaves a quarantined file alone while its id waits in delayed`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox = try raw(container, clock: clock)
    let id = UUID()
    try mailbox.enqueue(Data("1".utf8), id: id, delay: 60)
    let delayedName = try #require(container.names("delayed").first)
    // A copy of the same message in quarantine, as an operator might find one.
    let copy = "0000000000000001-malformed-\(id.uuidString.lowercased())-00000001.q"
    try FileManager.default.copyItem(
      at: container.area("delayed").appendingPathComponent(delayedName),
      to: container.area("quarantine").appendingPathComponent(copy))
    #expect(try mailbox.inspector.requeueQuarantined(copy) == .alreadyPresent(id))
    #expect(container.names("quarantine") == [copy])
    #expect(container.names("pending") == [])
  }

  /// Found by an adversarial review: mailboxctl's note said "already pending or claimed" for an
  /// id that waits in delayed/.
  @Test func `mailboxctl's requeue note names delayed among where the id is`() throws {
    let container = try TemporaryContainer()
    let id = try container.rawMailbox().enqueue(Data("1".utf8), delay: 3_600).id
    let delayedName = try #require(container.names("delayed").first)
    let copy = "0000000000000001-malformed-\(id.uuidString.lowercased())-00000001.q"
    try FileManager.default.copyItem(
      at: container.area("delayed").appendingPathComponent(delayedName),
      to: container.area("quarantine").appendingPathComponent(copy))
    let requeued = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["requeue", copy])
    #expect(requeued.stdout == "alreadyPresent \(copy)\n")
    #expect(
      requeued.stderr
        == "mailboxctl: quarantine: message \(id.uuidString.lowercased()) is already pending, "
        + "delayed or claimed\n")
    #expect(container.names("quarantine") == [copy])
  }

  @Test func `The untyped watcher wakes on an enqueue and wait wakes when a message is due`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let watcher = try mailbox.wakeUps()
    defer { watcher.close() }
    #expect(try watcher.wait(timeout: 0) == false)
    try mailbox.enqueue(Data("1".utf8))
    // 30 s is a correctness bound (a missed wake-up), not a timing assertion.
    #expect(try watcher.wait(timeout: 30))
    try #require(try mailbox.claimPending().first).acknowledge()
    try mailbox.enqueue(Data("2".utf8), delay: 0.2)
    #expect(try mailbox.claimPending().isEmpty)
    #expect(try mailbox.wait(timeout: 30))
    #expect(try mailbox.claimPending().map(\.payload) == [Data("2".utf8)])
    try mailbox.enqueue(Data("3".utf8), delay: 3_600)
    #expect(try mailbox.wait(timeout: 0.05) == false)
  }

  @Test func `An untyped drain delivers what is pending, then a delayed message when due`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("\"later\"".utf8), delay: 0.3)
    try mailbox.enqueue(Data("\"now\"".utf8))
    let delivered = Locked<[String]>([])
    let drain = Task {
      try await mailbox.drain { claim in
        delivered.withLock { $0.append(String(decoding: claim.payload, as: UTF8.self)) }
      }
    }
    let done = await waitUntilAsync(deadline: 900) { delivered.withLock { $0.count == 2 } }
    drain.cancel()
    _ = try? await drain.value
    #expect(done)
    #expect(delivered.withLock { $0 } == ["\"now\"", "\"later\""])
    #expect(try mailbox.inspector.status().depth == 0)
  }
}
