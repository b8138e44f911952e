import Foundation
import Testing

@testable import AppGroupMailbox

/// A message name or a `state` line carrying the largest sequence 20 digits hold made every
/// later enqueue fail with `ordinalExhausted`, for good: a recount keeps the counter at least
/// what the names say (found by an adversarial review: one planted file stopped a mailbox).
/// Later reviews found a rule that ignored high names reusing the sequences of messages
/// enqueued above it (their order flipped), and one that made every enqueue relist.
@Suite struct SequenceCeilingTests {
  let ceiling = SpoolCounters.sequenceCeiling

  /// Plants a valid message of `text` under a pending name with `sequence`, 100 s old.
  func plant(_ container: TemporaryContainer, _ text: String, sequence: UInt64) throws {
    let id = UUID()
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000) - 100_000_000
    try container.plant(
      "pending", pendingName(micros: micros, sequence: sequence, id: id),
      envelope(id: id, micros: micros, text: text))
  }

  @Test func `A planted name past the ceiling is delivered and does not move the counter`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    try plant(container, "planted", sequence: .max)
    try mailbox.spool.withStateLock { $0 = try mailbox.spool.recount(stored: $0) }
    try mailbox.enqueue("after")
    // Format 1, sequence 2 (first, after), depth 3 (the planted message counts).
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 2, 3])
    #expect(try mailbox.claimPending().map(\.message) == ["planted", "first", "after"])
  }

  /// A name at the ceiling itself stops enqueues while its message is in the mailbox, and no
  /// longer once a consumer took it.
  @Test func `A planted name at the ceiling stops enqueues only until its message is taken`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("first")
    try plant(container, "planted", sequence: ceiling)
    try mailbox.spool.withStateLock { $0 = try mailbox.spool.recount(stored: $0) }
    #expect(throws: AppGroupMailboxError.ordinalExhausted) { try mailbox.enqueue("refused") }
    for claim in try mailbox.claimPending() { try claim.acknowledge() }
    try mailbox.enqueue("after")
    #expect(try IndexedClaimTests.stateFields(container)[1] == 1)
    #expect(try mailbox.claimPending().map(\.message) == ["after"])
  }

  /// 2^64 - 1 is no line an enqueue writes (damaged); 2^63 - 1 is one with no room left, after
  /// which every enqueue failed.
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

  /// Messages enqueued with the counter high (a hand-written line) keep their place when the
  /// counter runs out: the rebuild counts on from their sequences, not from 0 (the order
  /// flipped when the rebuild ignored names above 2^62 - 1), and a lost `state` file hands no
  /// live sequence out again.
  @Test func `A rebuild at the ceiling counts on from the messages already there`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let line = "1 09223372036854775804 00000000000000000000 00000000000000000000\n"
    try Data(line.utf8).write(to: container.area("state"))
    let date = clock.now.addingTimeInterval(-10)
    try mailbox.enqueue("A", id: UUID(), enqueuedAt: date)
    try mailbox.enqueue("B", id: UUID(), enqueuedAt: date)
    try mailbox.enqueue("C", id: UUID(), enqueuedAt: date)
    #expect(throws: AppGroupMailboxError.ordinalExhausted) {
      try mailbox.enqueue("D", id: UUID(), enqueuedAt: date)
    }
    try FileManager.default.removeItem(at: container.area("state"))
    #expect(throws: AppGroupMailboxError.ordinalExhausted) {
      try mailbox.enqueue("D", id: UUID(), enqueuedAt: date)
    }
    #expect(try mailbox.claimPending().map(\.message) == ["A", "B", "C"])
  }

  /// With discard-oldest, an enqueue refused for want of a sequence evicted a message first,
  /// which was then lost for nothing (found by a review, in the library and interop/python
  /// alike): the sequence is made sure of before any eviction.
  @Test(arguments: ["swift", "batch", "python"])
  func `A full discard-oldest mailbox refused a sequence evicts nothing`(producer: String)
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest)
    let victim = try mailbox.enqueue(Data("1".utf8)).id
    let id = UUID()
    // Newer than the victim: an eviction takes the victim and leaves the ceiling in place.
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000)
    try container.plant(
      "pending", pendingName(micros: micros, sequence: ceiling, id: id),
      envelope(id: id, micros: micros, text: "at the ceiling", type: ""))
    try mailbox.spool.withStateLock { $0 = try mailbox.spool.recount(stored: $0) }
    switch producer {
    case "swift":
      #expect(throws: AppGroupMailboxError.ordinalExhausted) {
        try mailbox.enqueue(Data("3".utf8))
      }
    case "batch":
      let typed = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
      #expect(throws: AppGroupMailboxError.ordinalExhausted) {
        try typed.enqueue(contentsOf: ["3", "4"])
      }
    default:
      let refused = try PythonSpool.start("enqueue", container, stdin: Data("3".utf8)).finish()
      #expect(refused.status == 75, "\(refused.stderr)")
    }
    let pending = container.names("pending").compactMap(PendingName.init(parsing:))
    #expect(Set(pending.map(\.id)) == [victim, id])
  }
}
