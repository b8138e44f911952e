import Foundation
import Testing

@testable import AppGroupMailbox

/// Generic code over ``AppGroupMailboxProtocol`` serves the typed and the untyped mailbox alike:
/// everything the two have in common is reachable through the protocol (found by a new-user
/// trial: `claimPending()` needed `limit: nil`, and hold, cancel and due dates were missing).
@Suite struct GenericMailboxTests {
  /// Holds, checks, resumes and empties any mailbox; returns how many it acknowledged.
  func cycle(_ mailbox: some AppGroupMailboxProtocol, cancelling id: UUID) throws -> Int {
    try mailbox.pause()
    #expect(mailbox.isHeld)
    #expect(try mailbox.claimPending().isEmpty)
    try mailbox.resume()
    #expect(!mailbox.isHeld)
    #expect(try mailbox.cancel(id: id) == .cancelled)
    #expect(try mailbox.nextDueDate() != nil)
    #expect(mailbox.nextRecheckDate() == nil)
    let claims = try mailbox.claimPending()
    for claim in claims { try claim.acknowledge() }
    return claims.count
  }

  @Test func `One generic function holds, cancels and drains a typed and a raw mailbox`() throws {
    let container = try TemporaryContainer()
    let typed: AppGroupMailbox<String> = try container.mailbox(namespace: "typed")
    try typed.enqueue("A")
    let typedVictim = try typed.enqueue("B")
    try typed.enqueue("later", notBefore: Date().addingTimeInterval(3_600))
    #expect(try cycle(typed, cancelling: typedVictim) == 1)

    let raw = try container.rawMailbox(namespace: "raw")
    try raw.enqueue(Data("1".utf8))
    let rawVictim = try raw.enqueue(Data("2".utf8)).id
    try raw.enqueue(Data("3".utf8), notBefore: Date().addingTimeInterval(3_600))
    #expect(try cycle(raw, cancelling: rawVictim) == 1)
  }
}
