import Foundation
import Testing

@testable import AppGroupMailbox

/// Priority levels in one process (issue 17 item 5): claim order, what keeps the level, the
/// names, and spools written before levels.
@Suite struct PriorityTests {
  let start = Date(timeIntervalSince1970: 1_767_225_600)
  let startMicros: Int64 = 1_767_225_600_000_000

  @Test func `Claims take the highest level first and keep FIFO order within a level`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock(start: start))
    for (value, level) in [("a2", 2), ("b9", 9), ("c5", 5), ("d2", 2), ("e9", 9), ("f0", 0)] {
      try mailbox.enqueue(value, priority: level)
    }
    try mailbox.enqueue("g5")
    try mailbox.enqueue(contentsOf: ["h7", "i7"], priority: 7)
    #expect(
      try mailbox.inspector.entries(in: [.pending]).map(\.priority)
        == [9, 9, 7, 7, 5, 5, 2, 2, 0])
    let claimed = try mailbox.claimPending()
    #expect(claimed.map(\.message) == ["b9", "e9", "h7", "i7", "c5", "g5", "a2", "d2", "f0"])
    #expect(claimed.map(\.priority) == [9, 9, 7, 7, 5, 5, 2, 2, 0])
  }

  @Test
  func `Release, recovery, a retry delay and a delayed enqueue keep the level`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: start)
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 30), clock: clock)
    try mailbox.enqueue("low", priority: 2)
    try mailbox.enqueue("mid")
    try mailbox.enqueue("high", priority: 8)

    // Release: back at level 8, ahead of the older messages of lower levels.
    let first = try #require(try mailbox.claimPending(limit: 1).first)
    #expect(first.message == "high")
    #expect(container.names("claimed").map { $0.hasPrefix("p8-") } == [true])
    try first.release()
    #expect(container.names("pending").filter { $0.hasPrefix("p8-") }.count == 1)
    let again = try #require(try mailbox.claimPending(limit: 1).first)
    #expect([again.message] == ["high"] && again.deliveryCount == 2)

    // Recovery of the abandoned claim: level 8 again.
    clock.advance(31)
    let recovered = try #require(try mailbox.claimPending(limit: 1).first)
    #expect([recovered.message] == ["high"] && recovered.deliveryCount == 3)

    // A retry delay: waits in delayed/ with its level, then comes before "mid" and "low".
    try recovered.release(retryAfter: 10)
    let delayed = try #require(container.names("delayed").first)
    #expect(delayed.dropFirst(17).hasPrefix("p8-"))
    #expect(try mailbox.inspector.entries(in: [.delayed]).map(\.priority) == [8])
    let meanwhile = try #require(try mailbox.claimPending(limit: 1).first)
    #expect(meanwhile.message == "mid")
    try meanwhile.release()
    clock.advance(10)
    let due = try #require(try mailbox.claimPending(limit: 1).first)
    #expect([due.message] == ["high"] && due.deliveryCount == 4)
    try due.acknowledge()

    // A delayed enqueue joins the line at its level when due: ahead of the older "mid".
    try mailbox.enqueue("later", delay: 5, priority: 9)
    #expect(try mailbox.inspector.entries(in: [.delayed]).map(\.priority) == [9])
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["mid"])
    clock.advance(5)
    #expect(try mailbox.claimPending().map(\.message) == ["later", "low"])
  }

  @Test
  func `A name written before levels is claimed at the default level in its place`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock(start: start))
    try mailbox.enqueue("four", priority: 4)
    // A file as a version before levels wrote it: no prefix, a second older than the others.
    let id = UUID()
    let micros = startMicros - 1_000_000
    let old =
      String(format: "%016lld", micros) + "-00000000000000000099-"
      + id.uuidString.lowercased() + "-0.msg"
    let file =
      "{\"enqueuedAt\":\(micros),\"format\":1,\"id\":\"\(id.uuidString.lowercased())\","
      + "\"messageType\":\"\"}\n\"old\""
    try Data(file.utf8).write(to: container.area("pending").appendingPathComponent(old))
    try mailbox.enqueue("five")
    try mailbox.enqueue("six", priority: 6)
    let entries = try mailbox.inspector.entries(in: [.pending])
    #expect(entries.map(\.fileName).contains(old))
    #expect(entries.map(\.priority) == [6, 5, 5, 4])
    #expect(entries[1].fileName == old)
    #expect(try mailbox.claimPending().map(\.message) == ["six", "old", "five", "four"])
  }

  @Test func `Level prefixes parse only in their canonical form`() throws {
    let id = UUID()
    let stem = "1767225600000000-00000000000000000007-\(id.uuidString.lowercased())-3"
    let seven = try #require(PendingName(parsing: "p7-\(stem).msg"))
    #expect(seven.key == MessageKey(micros: startMicros, sequence: 7, level: 7))
    #expect(seven.attempts == 3 && seven.fileName == "p7-\(stem).msg")
    #expect(PendingName(parsing: "\(stem).msg")?.key.level == 5)
    #expect(PendingName(parsing: "\(stem).msg")?.fileName == "\(stem).msg")
    // The default level has no prefix; anything else is not a message name.
    for bad in ["p5-", "p-", "pa-", "p10-", "P7-", "p7_", "p7--"] {
      #expect(PendingName(parsing: "\(bad)\(stem).msg") == nil, "\(bad)")
    }
    let claimed = ClaimedName(message: seven, token: 0xabc, leaseUntilMicros: startMicros)
    #expect(claimed.fileName.hasPrefix("p7-\(stem)."))
    #expect(ClaimedName(parsing: claimed.fileName) == claimed)
    let delayed = DelayedName(dueMicros: startMicros, message: seven)
    #expect(delayed.fileName == "1767225600000000-p7-\(stem).msg")
    #expect(DelayedName(parsing: delayed.fileName) == delayed)
  }

  @Test func `A hand-made p5- name is quarantined as foreign; a p7- name is claimed first`() throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock(start: start))
    try mailbox.enqueue("plain")
    for (prefix, text) in [("p5-", "five"), ("p7-", "seven")] {
      let id = UUID()
      let name =
        "\(prefix)\(startMicros)-00000000000000000050-\(id.uuidString.lowercased())-0.msg"
      let file =
        "{\"enqueuedAt\":\(startMicros),\"format\":1,\"id\":\"\(id.uuidString.lowercased())\","
        + "\"messageType\":\"\"}\n\"\(text)\""
      try Data(file.utf8).write(to: container.area("pending").appendingPathComponent(name))
    }
    #expect(try mailbox.claimPending().map(\.message) == ["seven", "plain"])
    #expect(container.names("quarantine").map { $0.contains("-foreign-unknown-") } == [true])
  }

  @Test func `A keyed replacement keeps the pending message's level and place`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("\"first\"".utf8))
    let keyed = try mailbox.enqueue(
      Data("\"old\"".utf8), key: "k", onConflict: .replace, priority: 7)
    let replaced = try mailbox.enqueue(
      Data("\"new\"".utf8), key: "k", onConflict: .replace, priority: 1)
    #expect(replaced == .replaced(keyed.id))
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.priority) == [7, 5])
    let claims = try mailbox.claimPending()
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"new\"", "\"first\""])
  }

  @Test func `discardOldest evicts the lowest level first`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), overflowPolicy: .discardOldest, clock: FakeClock(start: start))
    try mailbox.enqueue("a9", priority: 9)
    try mailbox.enqueue("b1", priority: 1)
    try mailbox.enqueue("c5")
    try mailbox.enqueue("d1", priority: 1)
    try mailbox.enqueue("e5")
    #expect(try mailbox.claimPending().map(\.message) == ["a9", "c5", "e5"])
  }

  @Test func `discardOldest never evicts a higher level than the new message's`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), overflowPolicy: .discardOldest, clock: FakeClock(start: start))
    // Two delayed low messages and one urgent pending one: a new low message has nothing of its
    // level or lower to evict (delayed ones are never evicted), so it is refused.
    try mailbox.enqueue("d0", delay: 60, priority: 0)
    try mailbox.enqueue("e0", delay: 60, priority: 0)
    try mailbox.enqueue("p9", priority: 9)
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("new0", priority: 0) }
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("new8", priority: 8) }
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.priority) == [9])
    // A message of the same level evicts the oldest of that level, as without levels.
    try mailbox.enqueue("q9", priority: 9)
    #expect(try mailbox.claimPending().map(\.message) == ["q9"])
    #expect(container.names("delayed").count == 2)
    #expect(container.names("tmp") == [])
  }

  @Test func `discardOldest with only higher levels pending refuses the new message`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), overflowPolicy: .discardOldest, clock: FakeClock(start: start))
    for text in ["a9", "b9", "c9"] { try mailbox.enqueue(text, priority: 9) }
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("d0", priority: 0) }
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try mailbox.enqueue(contentsOf: ["e5", "f5"])
    }
    #expect(try mailbox.enqueue(contentsOf: ["g9", "h9"], priority: 9).count == 2)
    #expect(try mailbox.claimPending().map(\.message) == ["c9", "g9", "h9"])
  }

  @Test func `An enqueue that waits for room keeps its level`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: .init(maxMessages: 2))
    let raw = try container.rawMailbox(limits: .init(maxMessages: 2))
    try mailbox.enqueue("a")
    try mailbox.enqueue("b", waitingUpTo: 0, priority: 8)
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try raw.enqueue(Data("\"c\"".utf8), messageType: stringType, waitingUpTo: 0, priority: 9)
    }
    let first = try #require(try mailbox.claimPending(limit: 1).first)
    #expect(first.message == "b")
    try first.acknowledge()
    try raw.enqueue(Data("\"c\"".utf8), messageType: stringType, waitingUpTo: 0, priority: 9)
    #expect(try mailbox.inspector.entries(in: [.pending]).map(\.priority) == [9, 5])
    #expect(try mailbox.claimPending().map(\.message) == ["c", "a"])
  }

  @Test func `A level outside 0 to 9 is refused and nothing is written`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let raw = try container.rawMailbox()
    let refused = AppGroupMailboxError.invalidLimit("priority (accepted: 0...9)")
    for level in [-1, 10, Int.max] {
      #expect(throws: refused) { try mailbox.enqueue("x", priority: level) }
      #expect(throws: refused) { try mailbox.enqueue(contentsOf: ["x"], priority: level) }
      #expect(throws: refused) { try mailbox.enqueue("x", delay: 5, priority: level) }
      #expect(throws: refused) { try raw.enqueue(Data("1".utf8), priority: level) }
      #expect(throws: refused) {
        try raw.enqueue(Data("1".utf8), key: "k", onConflict: .keep, priority: level)
      }
    }
    #expect(container.names("pending") == [] && container.names("delayed") == [])
    #expect(container.names("tmp") == [])
  }
}
