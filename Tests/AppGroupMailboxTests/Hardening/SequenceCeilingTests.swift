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

  /// 2^64 - 1 is no line an enqueue writes (damaged); 2^63 - 1 is one with no room left, after
  /// which every enqueue failed (found by a review).
  @Test(arguments: ["18446744073709551615", "09223372036854775807"])
  func `A state line with no sequence left is rebuilt from the names`(sequence: String) throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    let line = "1 \(sequence) 00000000000000000001 00000000000000000000\n"
    try Data(line.utf8).write(to: container.area("state"))
    try mailbox.enqueue("second")
    #expect(try IndexedClaimTests.stateFields(container)[1] == 2)
    try mailbox.enqueue(contentsOf: ["third", "fourth"])
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 4, 4])
    #expect(
      try mailbox.claimPending().map(\.message) == ["first", "second", "third", "fourth"])
  }

  /// A name at the trusted ceiling itself: the counter takes it, and the enqueues after it
  /// count on from there, each once, without listing the mailbox again (a review found every
  /// enqueue recounting and handing out the same sequence when lines above 2^62 - 1 were
  /// refused).
  @Test func `A planted name at the trusted ceiling leaves the counter counting on`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let id = UUID()
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000) - 100_000_000
    let ceiling = SpoolCounters.trustedSequenceCeiling
    try container.plant(
      "pending", pendingName(micros: micros, sequence: ceiling, id: id),
      envelope(id: id, micros: micros, text: "planted"))
    try mailbox.spool.withStateLock { $0 = try mailbox.spool.recount(stored: $0) }
    try mailbox.enqueue("a")
    try mailbox.enqueue("b")
    #expect(try IndexedClaimTests.stateFields(container)[1] == ceiling + 2)
    let sequences = container.names("pending").compactMap { PendingName(parsing: $0)?.key.sequence }
    #expect(sequences.sorted() == [ceiling, ceiling + 1, ceiling + 2])
  }
}
