import Foundation
import Testing

@testable import AppGroupMailbox

/// A message name or a `state` line carrying the largest sequence 20 digits hold made every
/// later enqueue fail with `ordinalExhausted`, for good: a recount keeps the counter at least
/// what the names say (found by an adversarial review: one planted file stopped a mailbox).
@Suite struct SequenceCeilingTests {
  @Test(arguments: [UInt64.max, UInt64(Int64.max), UInt64(Int64.max) / 2 + 1])
  func `A planted name with the largest sequence is delivered and exhausts nothing`(
    sequence: UInt64
  ) throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    let id = UUID()
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000) - 100_000_000
    try container.plant(
      "pending", pendingName(micros: micros, sequence: sequence, id: id),
      envelope(id: id, micros: micros, text: "planted"))
    try mailbox.spool.withStateLock { $0 = try mailbox.spool.recount(stored: $0) }
    try mailbox.enqueue("after")
    // Format 1, sequence 2 (first, after), depth 3 (the planted message counts).
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 2, 3])
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["planted", "first", "after"])
  }

  @Test func `A state line with a sequence past the ceiling is rebuilt from the names`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    // 2^63 - 1: a line an enqueue cannot write after the line it read (found by a review).
    let line = "1 09223372036854775807 00000000000000000001 00000000000000000000\n"
    try Data(line.utf8).write(to: container.area("state"))
    try mailbox.enqueue("second")
    #expect(try IndexedClaimTests.stateFields(container)[1] == 2)
    #expect(try mailbox.claimPending().map(\.message) == ["first", "second"])
  }
}
