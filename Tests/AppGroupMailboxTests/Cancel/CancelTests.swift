import Foundation
import Testing

@testable import AppGroupMailbox

/// Cancel by id (issue 17 item 6) within one process: each outcome and the depth counter.
@Suite struct CancelTests {
  @Test
  func `Cancel removes a pending message, no claim returns it, and the depth counts what is left`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(String.self)
    let a = try mailbox.enqueue("A")
    let b = try mailbox.enqueue("B")
    try mailbox.enqueue("C")
    #expect(try mailbox.cancel(id: b) == .cancelled)
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(2)) == [1, 3])
    try container.expectDepth(2)
    #expect(container.names("pending").count == 2)
    #expect(try mailbox.cancel(id: b) == .notFound)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["A", "C"])
    #expect(claims.first?.id == a)
    for claim in claims { try claim.acknowledge() }
    try container.expectDepth(0)
  }

  @Test func `Cancel removes a delayed message before it is due`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox = try container.mailbox(Int.self, clock: clock)
    let later = try mailbox.enqueue(7, delay: 60)
    try mailbox.enqueue(8)
    #expect(container.names("delayed").count == 1)
    #expect(try mailbox.cancel(id: later) == .cancelled)
    #expect(container.names("delayed").isEmpty)
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(2)) == [1, 2])
    try container.expectDepth(1)
    clock.advance(120)
    #expect(try mailbox.claimPending().map(\.message) == [8])
  }

  @Test func `A claimed message is refused and stays its holder's`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let id = try mailbox.enqueue(Data("1".utf8)).id
    let claim = try #require(try mailbox.claimPending().first)
    #expect(try mailbox.cancel(id: id) == .claimed)
    #expect(container.names("claimed").count == 1)
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 1, 1])
    try claim.release()
    #expect(try mailbox.cancel(id: id) == .cancelled)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim.acknowledge() }
    try container.expectDepth(0)
  }

  @Test func `A quarantined message is left to quarantine purge and its file is named`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let id = try mailbox.enqueue(Data("1".utf8)).id
    try #require(try mailbox.claimPending().first).deadLetter()
    let names = container.names("quarantine")
    try #require(names.count == 1)
    #expect(try mailbox.cancel(id: id) == .quarantined(fileName: names[0]))
    #expect(container.names("quarantine") == names)
    #expect(try mailbox.inspector.purgeQuarantined(names[0]))
    #expect(try mailbox.cancel(id: id) == .notFound)
  }

  @Test func `A never enqueued id is not found and changes nothing`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(String.self)
    try mailbox.enqueue("A")
    #expect(try mailbox.cancel(id: UUID()) == .notFound)
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 1, 1])
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
  }
}
