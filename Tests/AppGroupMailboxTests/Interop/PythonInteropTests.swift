import Foundation
import Testing

@testable import AppGroupMailbox

/// The Python implementation (written from docs/FORMAT.md alone) and the Swift library and
/// `mailboxctl` exchange messages both ways: order, bytes and ids survive, imports by id are
/// idempotent across implementations.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonInteropTests {
  static let count = 1_000

  @Test
  func
    `Messages a Python producer writes come out of the library and mailboxctl in order, byte for byte`()
    throws
  {
    let container = try TemporaryContainer()
    let messages = interopMessages(Self.count)
    let produced = try PythonSpool.enqueue(messages, into: container, ["--max-messages", "2000"])
    #expect(produced.map(\.outcome) == Array(repeating: "published", count: Self.count))
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 2_000))
    let half = Self.count / 2
    let claims = try mailbox.claimPending(limit: half)
    #expect(claims.map { $0.id.uuidString.lowercased() } == produced.prefix(half).map(\.id))
    #expect(
      claims.map { String(decoding: $0.payload, as: UTF8.self) } == Array(messages.prefix(half)))
    #expect(claims.allSatisfy { $0.deliveryCount == 1 && $0.messageType == "" })
    for claim in claims { try claim.acknowledge() }
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(drained.status == 0)
    let lines = try jsonLines(drained.stdout)
    #expect(lines.compactMap { $0["id"] as? String } == produced.suffix(half).map(\.id))
    // mailboxctl writes the message bytes as they are, last in the object.
    #expect(
      zip(drained.lines, messages.suffix(half)).filter { !$0.hasSuffix("\"message\":\($1)}") }
        .count == 0)
    #expect(drained.lines.count == half)
    #expect(container.names("pending").isEmpty && container.names("quarantine").isEmpty)
  }

  @Test
  func
    `Messages the library and mailboxctl write come out of the Python consumer in order, byte for byte`()
    throws
  {
    let container = try TemporaryContainer()
    let messages = interopMessages(Self.count)
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 2_000))
    let half = Self.count / 2
    var ids = try messages.prefix(half).map {
      try mailbox.enqueue(Data($0.utf8), messageType: "Interop.Job").id.uuidString.lowercased()
    }
    let enqueued = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines", "--max-messages", "2000"],
      stdin: Data(messages.suffix(half).joined(separator: "\n").utf8))
    #expect(enqueued.status == 0)
    ids += enqueued.lines
    let drained = try PythonSpool.delivered(
      PythonSpool.run("drain", container, ["--max-messages", "2000"]))
    #expect(drained.map(\.id) == ids)
    #expect(drained.map(\.payload) == messages)
    #expect(drained.allSatisfy { $0.deliveryCount == 1 })
    #expect(
      drained.map(\.messageType)
        == Array(repeating: "Interop.Job", count: half) + Array(repeating: "", count: half))
    #expect(try mailbox.inspector.status().pending == 0)
    try container.expectDepth(0)
  }

  @Test
  func
    `An id pending, claimed, delayed or quarantined by the library is a duplicate for Python, and back`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let ids = (1...4).map { importID($0) }
    try raw.enqueue(Data("1".utf8), id: ids[3], messageType: "Mine")
    _ = try container.mailbox(String.self, messageType: "Mine").claimPending()  // malformed
    #expect(container.names("quarantine").count == 1)
    try raw.enqueue(Data("\"claimed\"".utf8), id: ids[1])
    let held = try raw.claimPending(limit: 1)
    #expect(held.map(\.id) == [ids[1]])
    try raw.enqueue(Data("\"pending\"".utf8), id: ids[0])
    try raw.enqueue(Data("\"delayed\"".utf8), id: ids[2], delay: 3_600)
    let before = ["pending", "claimed", "delayed", "quarantine"].map { container.names($0) }
    for id in ids {
      let outcome = try PythonSpool.enqueue(
        ["\"again\""], into: container, ["--id", id.uuidString.lowercased()])
      #expect(outcome.map(\.outcome) == ["duplicate"])
    }
    #expect(["pending", "claimed", "delayed", "quarantine"].map { container.names($0) } == before)

    // Python imports with explicit dates: placed by date, and duplicates for the library.
    let fresh = try TemporaryContainer()
    // An hour ago, in whole seconds: well inside the default lifetime of a day.
    let base = (Int64(Date().timeIntervalSince1970) - 3_600) * 1_000_000
    for (index, id) in ids.enumerated().reversed() {
      let outcome = try PythonSpool.enqueue(
        ["\(index)"], into: fresh,
        ["--id", id.uuidString, "--enqueued-at-us", String(base + Int64(index) * 1_000_000)])
      #expect(outcome.map(\.outcome) == ["published"])
    }
    let library = try fresh.rawMailbox()
    for id in ids {
      let receipt = try library.enqueue(Data("9".utf8), id: id, enqueuedAt: Date())
      #expect(receipt.wasAlreadyPresent)
    }
    let claims = try library.claimPending()
    #expect(claims.map(\.id) == ids)
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["0", "1", "2", "3"])
    #expect(
      claims.map { Int64(($0.enqueuedAt.timeIntervalSince1970 * 1_000_000).rounded()) }
        == (0..<4).map { base + Int64($0) * 1_000_000 })
  }

  @Test
  func `Entries the Python consumer quarantines are listed by the library with their reasons`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let valid = try raw.enqueue(Data("\"valid\"".utf8)).id
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let future = UUID()
    let mismatched = UUID()
    let linked = UUID()
    let outside = container.url.appendingPathComponent("outside")
    try Data("outside".utf8).write(to: outside)
    try container.plant("pending", "notes.txt", Array("not a message".utf8))
    try container.plant(
      "pending", pendingName(micros: now - 3, sequence: 100, id: future),
      envelope(id: future, micros: now - 3, text: "later format", format: 2))
    try container.plant(
      "pending", pendingName(micros: now - 2, sequence: 101, id: mismatched),
      envelope(id: UUID(), micros: now - 2, text: "someone else's id"))
    let link = container.path("pending", pendingName(micros: now - 1, sequence: 102, id: linked))
    #expect(symlink(outside.path, link) == 0)
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload) == ["\"valid\""])
    #expect(drained.map(\.id) == [valid.uuidString.lowercased()])
    let listed = try raw.inspector.entries(in: [.quarantined])
    #expect(
      listed.compactMap(\.quarantineReason).sorted() == [
        "foreign", "future", "malformed", "unsafe",
      ])
    #expect(
      Set(listed.map(\.id)) == [nil, future, mismatched, linked])
    #expect(container.names("pending").isEmpty && container.names("claimed").isEmpty)
    try container.expectDepth(0)
    #expect(try String(contentsOf: outside, encoding: .utf8) == "outside")
  }

  @Test func `A full mailbox makes a Python producer with discardOldest delete the oldest pending`()
    throws
  {
    let container = try TemporaryContainer()
    // The stored policy applies to every opener: the mailbox is made with discardOldest, and the
    // Python producer's own --max-messages and policy flags are left at their defaults.
    let mailbox = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", limits: .init(maxMessages: 2),
      overflowPolicy: .discardOldest)
    for message in ["1", "2"] { _ = try mailbox.enqueue(Data(message.utf8)) }
    let produced = try PythonSpool.enqueue(["3", "4"], into: container)
    #expect(produced.map(\.outcome) == ["published", "published"])
    let claims = try mailbox.claimPending(limit: 10)
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["3", "4"])
    #expect(claims.map { $0.id.uuidString.lowercased() } == produced.map(\.id))
    for claim in claims { try claim.acknowledge() }
    try container.expectDepth(0)
  }
}

/// The `depth` field of the namespace's `state` line (docs/FORMAT.md).
func stateDepth(_ container: TemporaryContainer) throws -> Int {
  let line = try String(
    contentsOf: container.url.appendingPathComponent("AppGroupMailbox/jobs/state"),
    encoding: .utf8)
  let fields = line.split(separator: " ")
  try #require(fields.count == 4 && line.utf8.count == 65, "state line: \(line)")
  return try #require(Int(fields[2]))
}
