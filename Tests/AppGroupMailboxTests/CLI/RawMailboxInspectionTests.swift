import Foundation
import Glibc
import Synchronization
import Testing

@testable import AppGroupMailbox

/// The untyped mailbox and the inspection API the CLI is built on.
@Suite struct RawMailboxInspectionTests {
  @Test func `An untyped enqueue stores the bytes as given and refuses what is not JSON`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    #expect(throws: AppGroupMailboxError.decodingFailure) { try mailbox.enqueue(Data("{".utf8)) }
    #expect(throws: AppGroupMailboxError.decodingFailure) { try mailbox.validate(Data()) }
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
    let payload = Data("{ \"b\": 1,  \"a\": [\"é\"] }".utf8)
    let receipt = try mailbox.enqueue(payload, messageType: "x.Y")
    #expect(!receipt.wasAlreadyPresent)
    let claim = try #require(try mailbox.claimPending().first)
    #expect(claim.id == receipt.id)
    #expect(claim.payload == payload)
    #expect(claim.messageType == "x.Y")
    #expect(claim.deliveryCount == 1)
    try claim.acknowledge()
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim.release() }
  }

  @Test func `Validate refuses a message file over the limit and an explicit id is unique`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 200))
    let large = Data(("\"" + String(repeating: "x", count: 150) + "\"").utf8)
    #expect {
      try mailbox.validate(large)
    } throws: { error in
      guard case AppGroupMailboxError.payloadTooLarge(let actual, 200) = error else { return false }
      return actual > 200
    }
    let id = UUID()
    #expect(try mailbox.enqueue(Data("1".utf8), id: id).wasAlreadyPresent == false)
    #expect(try mailbox.enqueue(Data("2".utf8), id: id).wasAlreadyPresent == true)
    #expect(container.names("pending").count == 1)
  }

  @Test func `Status and entries describe every area from names and sizes`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date().addingTimeInterval(-60))
    let typed: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let first = try typed.enqueue("a")
    clock.advance(1)
    let second = try typed.enqueue("b")
    let claim = try #require(try typed.claimPending(limit: 1).first)
    try Data("x".utf8).write(to: container.area("tmp").appendingPathComponent("1-ab.tmp"))
    try Data("junk".utf8).write(to: container.area("quarantine").appendingPathComponent("foreign"))
    let status = try typed.inspector.status()
    #expect(status.pending == 1)
    #expect(status.claimed == 1)
    #expect(status.quarantined == 1)
    #expect(status.temporaryFiles == 1)
    #expect(status.oldestPendingEnqueuedAt == Date(mailboxMicros: clock.mailboxClock.nowMicros()))
    #expect(status.oldestClaimedAt != nil)
    let sizes = ["pending", "claimed", "tmp", "quarantine"].flatMap { area in
      container.names(area).map { name in
        (try? Data(contentsOf: container.area(area).appendingPathComponent(name)).count) ?? 0
      }
    }
    #expect(status.bytes == sizes.reduce(0, +))
    let entries = try typed.inspector.entries()
    #expect(entries.map(\.state) == [.pending, .claimed, .quarantined])
    #expect(entries.map(\.id) == [second, first, nil])
    #expect(entries.map(\.deliveryCount) == [0, 1, nil])
    #expect(entries[1].leaseExpiresAt != nil)
    #expect(entries[2].fileName == "foreign")
    #expect(claim.id == first)
    let envelope = try #require(
      try typed.inspector.envelope(second.uuidString, includeMessage: true))
    #expect(envelope.format == 1)
    #expect(envelope.messageType == typed.messageType)
    #expect(envelope.message == Data("\"b\"".utf8))
    #expect(try typed.inspector.envelope(UUID().uuidString) == nil)
  }

  @Test func `Counts from names agree with the status, each message once`() throws {
    let container = try TemporaryContainer()
    let typed: AppGroupMailbox<String> = try container.mailbox()
    for text in ["a", "b", "c"] { try typed.enqueue(text) }
    try typed.enqueue("later", notBefore: Date().addingTimeInterval(3_600))
    let claim = try #require(try typed.claimPending(limit: 1).first)
    try Data("junk".utf8).write(to: container.area("pending").appendingPathComponent("foreign"))
    try Data("junk".utf8).write(to: container.area("quarantine").appendingPathComponent("foreign"))
    // The claimed message also under its pending name, as a listing may meet a message that
    // moves while it is listed: counted once, where it was seen last (pending).
    let claimedName = try #require(container.names("claimed").first)
    let pendingName = try #require(ClaimedName(parsing: claimedName)?.message.fileName)
    try FileManager.default.copyItem(
      at: container.area("claimed").appendingPathComponent(claimedName),
      to: container.area("pending").appendingPathComponent(pendingName))
    let counts = try typed.inspector.counts()
    #expect(
      counts
        == AppGroupMailboxCounts(
          pending: 3, claimed: 0, delayed: 1, quarantined: 1,
          pendingByPriority: [AppGroupMailboxPriority.default: 3]))
    #expect(counts.depth == 4)
    let status = try typed.inspector.status()
    let fromStatus: [Int] = [
      status.pending, status.claimed, status.delayed, status.quarantined, status.depth,
    ]
    #expect(
      fromStatus
        == [counts.pending, counts.claimed, counts.delayed, counts.quarantined, counts.depth])
    try FileManager.default.removeItem(
      at: container.area("pending").appendingPathComponent(pendingName))
    try claim.acknowledge()
    #expect(
      try typed.inspector.counts()
        == AppGroupMailboxCounts(
          pending: 2, claimed: 0, delayed: 1, quarantined: 1,
          pendingByPriority: [AppGroupMailboxPriority.default: 2]))
  }

  @Test func `Requeue keeps the id and date, respects the bound and refuses duplicates`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxMessages: 1))
    let id = try raw.enqueue(Data("1".utf8), messageType: "Other").id
    let typed: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 1), messageType: "Other")
    #expect(try typed.claimPending().isEmpty)
    let quarantined = try #require(try raw.inspector.entries(in: [.quarantined]).first)
    #expect(quarantined.id == id)
    #expect(quarantined.quarantineReason == "malformed")
    try raw.enqueue(Data("1".utf8))
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try raw.inspector.requeueQuarantined(quarantined.fileName)
    }
    #expect(container.names("quarantine") == [quarantined.fileName])
    let blocker = try #require(try raw.claimPending().first)
    try blocker.acknowledge()
    #expect(try raw.inspector.requeueQuarantined(quarantined.fileName) == .requeued(id))
    #expect(try raw.inspector.requeueQuarantined(quarantined.fileName) == .notFound)
    #expect(try raw.inspector.requeueQuarantined("../state") == .notFound)
    #expect(try raw.inspector.purgeQuarantined("..") == false)
    let back = try #require(try raw.claimPending().first)
    #expect(back.id == id)
    #expect(back.deliveryCount == 1)
    #expect(back.messageType == "Other")
  }

  /// Found by an adversarial review: a requeue racing a purge of the same file said the file
  /// stays in quarantine as no message (`notAMessage`) though the purge had deleted it.
  @Test(arguments: ["openat", "renameat2"])
  func `Requeue of a file purged meanwhile finds nothing`(call: String) throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let id = try raw.enqueue(Data("1".utf8), messageType: "Other").id
    let typed: AppGroupMailbox<String> = try container.mailbox(messageType: "Other")
    #expect(try typed.claimPending().isEmpty)
    let quarantined = try #require(try raw.inspector.entries(in: [.quarantined]).first)
    #expect(quarantined.id == id)
    let path = container.area("quarantine").path + "/" + quarantined.fileName
    // The purge deletes the file just before the requeue opens it, or just before its move.
    let recorder = SystemCallRecording.Recorder { made in
      if made.name == call, made.path == quarantined.fileName { unlink(path) }
    }
    let outcome = try SystemCallRecording.recording(recorder) {
      try raw.inspector.requeueQuarantined(quarantined.fileName)
    }
    #expect(outcome == .notFound)
    #expect(container.names("pending").isEmpty && container.names("quarantine").isEmpty)
  }

  @Test func `Requeue keeps a file whose message is not one JSON value in quarantine`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let id = UUID()
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000)
    // A header every reader accepts before a message that is not JSON (a trailing comma).
    let header = try Envelope.encode(id: id, enqueuedAt: micros, messageType: "", payload: Data())
    try container.plant(
      "pending", pendingName(micros: micros, sequence: 1, id: id),
      Array(header) + Array("[1,]".utf8))
    #expect(try raw.claimPending().isEmpty)
    let quarantined = try #require(try raw.inspector.entries(in: [.quarantined]).first)
    #expect(quarantined.quarantineReason == "malformed")
    // Put back, every consumer would quarantine it again.
    #expect(try raw.inspector.requeueQuarantined(quarantined.fileName) == .notAMessage)
    #expect(container.names("quarantine") == [quarantined.fileName])
    #expect(container.names("pending") == [])
  }

  /// Found by an adversarial review: counts and listings taken while other consumers claim and
  /// release listed a message in pending and again in claimed (a depth above maxMessages, an
  /// id listed twice). Each message now counts once, where it was seen last. The workers claim
  /// and put back for as long as the inspector samples.
  @Test func `Counts and listings never count a message twice while it moves`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 20))
    for number in 0..<20 { try mailbox.enqueue(Data("\(number)".utf8)) }
    let done = Atomic<Bool>(false)
    let moves = Atomic<Int>(0)
    let workers = DispatchGroup()
    for _ in 0..<3 {
      DispatchQueue.global().async(group: workers) {
        while !done.load(ordering: .relaxed) {
          for claim in (try? mailbox.claimPending(limit: 2)) ?? [] {
            try? claim.releaseUndelivered()
            moves.add(1, ordering: .relaxed)
          }
        }
      }
    }
    var overCounted: [Int] = []
    var twice: [Int] = []
    // At least 200 samples, and on until the workers made 500 moves (60 s at most).
    let deadline = Date().addingTimeInterval(60)
    var samples = 0
    while samples < 200 || (moves.load(ordering: .relaxed) < 500 && Date() < deadline) {
      samples += 1
      let depth = try mailbox.inspector.status().depth
      if depth > 20 { overCounted.append(depth) }
      let ids = try mailbox.inspector.entries(in: [.pending, .claimed, .delayed]).map(\.id)
      if Set(ids).count != ids.count { twice.append(ids.count) }
    }
    done.store(true, ordering: .relaxed)
    workers.wait()
    #expect(moves.load(ordering: .relaxed) >= 500)
    #expect(overCounted == [])
    #expect(twice == [])
  }
}
