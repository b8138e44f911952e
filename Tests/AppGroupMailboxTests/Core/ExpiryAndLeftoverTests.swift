import Foundation
import Testing

@testable import AppGroupMailbox

/// Message lifetime and a crashed writer's temporary files (issue semantics 6 and 7).
@Suite struct ExpiryAndLeftoverTests {
  @Test func `Messages older than messageLifetime are removed by claim and by maintenance`() throws
  {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 100), clock: clock, diagnostics: diagnostics)
    try mailbox.enqueue("A")
    clock.advance(50)
    try mailbox.enqueue("B")
    clock.advance(50)
    try mailbox.enqueue("C")
    // A is exactly 100 s old: expired (age >= lifetime); B is 50 s old.
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["B"])
    #expect(diagnostics.all == [.expiredMessageRemoved])
    try container.expectDepth(2)
    clock.advance(100)
    try mailbox.performMaintenance()
    #expect(container.names("pending") == [])
    #expect(diagnostics.count(.expiredMessageRemoved) == 2)
  }

  @Test func `Release does not extend the lifetime and an active claim never expires`() throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 100, claimTimeout: 1_000), clock: clock,
      diagnostics: diagnostics)
    try mailbox.enqueue("A")
    clock.advance(10)
    try mailbox.enqueue("B")
    let claimA = try mailbox.claimPending(limit: 1)
    clock.advance(95)
    try mailbox.performMaintenance()
    #expect(container.claimedNames().map(\.message.id) == [claimA[0].id])
    #expect(diagnostics.all == [])
    try claimA[0].release()
    #expect(try mailbox.claimPending().map(\.message) == ["B"])
    #expect(diagnostics.all == [.expiredMessageRemoved])
    #expect(container.names("pending") == [])
  }

  @Test func `An active claim past its message lifetime can still be acknowledged`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 100, claimTimeout: 1_000), clock: clock)
    try mailbox.enqueue("A")
    let claim = try mailbox.claimPending()
    clock.advance(500)
    try mailbox.performMaintenance()
    #expect(try mailbox.claimPending().isEmpty)
    try claim[0].acknowledge()
    try container.expectDepth(0)
  }

  @Test func `An abandoned claim whose message also expired is removed, not restored`() throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 100, claimTimeout: 50), clock: clock,
      diagnostics: diagnostics)
    try mailbox.enqueue("A")
    let claim = try mailbox.claimPending()
    clock.advance(120)
    try mailbox.performMaintenance()
    #expect(diagnostics.all == [.expiredMessageRemoved])
    #expect(container.names("claimed") == [])
    #expect(container.names("pending") == [])
    try container.expectDepth(0)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim[0].acknowledge() }
  }

  @Test
  func
    `A crashed writer's temporary files are never counted or delivered and are swept after the grace period`()
    throws
  {
    #expect(SpoolConfiguration.temporaryFileGrace == 900)
    let container = try TemporaryContainer()
    // The sweep compares file times with the mailbox clock: start the fake clock at real time.
    let clock = FakeClock(start: Date())
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 1), clock: clock, diagnostics: diagnostics)
    let header = try messageFile("leftover", id: UUID(), enqueuedAt: micros(clock.now))
    try container.plant("tmp", "1234-00ff.tmp", header)
    try container.plant("tmp", "1234-0100.tmp", header)
    try container.plant("tmp", "5678-young.tmp", header)
    try container.setModified("tmp", "1234-00ff.tmp", to: clock.now.addingTimeInterval(-3_600))
    try container.setModified("tmp", "1234-0100.tmp", to: clock.now.addingTimeInterval(-901))
    try container.setModified("tmp", "5678-young.tmp", to: clock.now.addingTimeInterval(-899))
    // Not counted: a mailbox of one still takes a message.
    try mailbox.enqueue("real")
    try container.expectDepth(1)
    // Not delivered.
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["real"])
    try claims[0].acknowledge()
    try mailbox.performMaintenance()
    #expect(container.names("tmp") == ["5678-young.tmp"])
    #expect(diagnostics.all == [.staleTemporaryFileRemoved, .staleTemporaryFileRemoved])
    #expect(try mailbox.claimPending().isEmpty)
    try container.expectDepth(0)
  }
}
