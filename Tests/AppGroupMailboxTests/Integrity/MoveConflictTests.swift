import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Case C15 and issue 11, item 1: one move policy. A second entry in the way of any move (a
/// leftover, a planted copy, or the second link a crash in the link-then-unlink fallback leaves)
/// is dropped when it is the same file or byte-equal, quarantined with reason `conflict`
/// otherwise; never delivered twice, never an error to the caller.
@Suite struct MoveConflictTests {
  /// How the entry in the way relates to the message.
  enum Copy: String, CaseIterable, Sendable {
    /// A byte-equal copy: dropped as a duplicate.
    case equal
    /// A second link of the same inode (a crash between link and unlink): dropped.
    case link
    /// The same id and name with other bytes: quarantined with reason `conflict`.
    case different
  }

  /// A mailbox with a fake clock holding A and B; the test plants in the way of A's moves.
  struct Setup {
    let container: TemporaryContainer
    let clock = FakeClock()
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String>
    let a: UUID
    let b: UUID

    init() throws {
      container = try TemporaryContainer()
      mailbox = try container.mailbox(clock: clock, diagnostics: recorder)
      a = try mailbox.enqueue("A")
      b = try mailbox.enqueue("B")
    }

    var pendingA: PendingName { container.pendingNames().first { $0.id == a }! }

    /// Puts a copy (or link, or different file) of `area/name` at `toArea/toName`.
    func plant(_ copy: Copy, of area: String, _ name: String, at toArea: String, _ toName: String)
      throws
    {
      let source = container.path(area, name)
      let target = container.path(toArea, toName)
      switch copy {
      case .equal:
        try FileManager.default.copyItem(atPath: source, toPath: target)
      case .link:
        #expect(Glibc.link(source, target) == 0)
      case .different:
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let header = bytes.prefix { $0 != UInt8(ascii: "\n") }
        try (header + Data("\n\"A, other bytes\"".utf8)).write(to: URL(fileURLWithPath: target))
      }
    }

    /// Claims and acknowledges everything (advancing the clock past every delay); returns the
    /// messages in delivery order.
    func drain() throws -> [String] {
      var delivered: [String] = []
      for _ in 0..<10 {
        clock.advance(3_600)
        let claims = try mailbox.claimPending()
        for claim in claims {
          delivered.append(claim.message)
          try claim.acknowledge()
        }
      }
      return delivered
    }

    /// What the policy must have done with the entry in the way.
    func expectPolicy(_ copy: Copy, sourceLocation: SourceLocation = #_sourceLocation) throws {
      switch copy {
      case .equal, .link:
        #expect(recorder.count(.duplicateEntryDropped) == 1, sourceLocation: sourceLocation)
        #expect(container.quarantined().isEmpty, sourceLocation: sourceLocation)
      case .different:
        #expect(recorder.count(.duplicateEntryDropped) == 0, sourceLocation: sourceLocation)
        #expect(
          container.quarantined().map(\.reason) == [.conflict], sourceLocation: sourceLocation)
        #expect(container.quarantined().map(\.id) == [a], sourceLocation: sourceLocation)
      }
      #expect(container.names("pending").isEmpty, sourceLocation: sourceLocation)
      #expect(container.names("claimed").isEmpty, sourceLocation: sourceLocation)
      #expect(container.names("delayed").isEmpty, sourceLocation: sourceLocation)
      try container.expectDepth(0, sourceLocation: sourceLocation)
    }
  }

  @Test(arguments: Copy.allCases)
  func `Pending and delayed: a due copy of a pending message is promoted onto it`(copy: Copy)
    throws
  {
    let setup = try Setup()
    let name = setup.pendingA.fileName
    let due = DelayedName(dueMicros: micros(setup.clock) - 1, message: setup.pendingA)
    try setup.plant(copy, of: "pending", name, at: "delayed", due.fileName)
    #expect(try setup.drain() == ["A", "B"])
    // The entry in the way is the pending one, the one that moves the delayed one.
    try setup.expectPolicy(copy)
  }

  @Test(arguments: Copy.allCases)
  func `Pending and claimed: an abandoned claim of a pending message is recovered onto it`(
    copy: Copy
  ) throws {
    let setup = try Setup()
    let claimed = ClaimedName(
      message: setup.pendingA, token: 0xabc, leaseUntilMicros: micros(setup.clock) - 1)
    try setup.plant(copy, of: "pending", setup.pendingA.fileName, at: "claimed", claimed.fileName)
    #expect(try setup.drain() == ["A", "B"])
    try setup.expectPolicy(copy)
  }

  @Test(arguments: Copy.allCases)
  func `Claimed and pending: a release finds a copy under the message's pending name`(copy: Copy)
    throws
  {
    let setup = try Setup()
    let claim = try #require(try setup.mailbox.claimPending(limit: 1).first)
    let claimed = try #require(setup.container.claimedNames().first)
    try setup.plant(
      copy, of: "claimed", claimed.fileName, at: "pending", claimed.message.fileName)
    try claim.release()
    // The entry already under the name stays; the moving one gives way.
    #expect(try setup.drain() == [copy == .different ? "A, other bytes" : "A", "B"])
    try setup.expectPolicy(copy)
  }

  @Test(arguments: Copy.allCases)
  func `Claimed and delayed: a release with a delay finds a copy under its delayed name`(
    copy: Copy
  ) throws {
    let setup = try Setup()
    let claim = try #require(try setup.mailbox.claimPending(limit: 1).first)
    let claimed = try #require(setup.container.claimedNames().first)
    let delayed = DelayedName(dueMicros: micros(setup.clock) + 5_000_000, message: claimed.message)
    try setup.plant(copy, of: "claimed", claimed.fileName, at: "delayed", delayed.fileName)
    try claim.release(retryAfter: 5)
    #expect(setup.container.names("delayed") == [delayed.fileName])
    #expect(try setup.drain() == [copy == .different ? "A, other bytes" : "A", "B"])
    try setup.expectPolicy(copy)
  }

  @Test(arguments: Copy.allCases)
  func `Claimed and claimed: a renewal finds a copy under the renewed name`(copy: Copy) throws {
    let setup = try Setup()
    let claim = try #require(try setup.mailbox.claimPending(limit: 1).first)
    let claimed = try #require(setup.container.claimedNames().first)
    setup.clock.advance(1)
    var renewed = claimed
    renewed.leaseUntilMicros = micros(setup.clock) + 600_000_000
    try setup.plant(copy, of: "claimed", claimed.fileName, at: "claimed", renewed.fileName)
    if copy == .different {
      // The claim itself went to quarantine: it no longer exists for its holder.
      #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim.renew() }
      #expect(setup.container.quarantined().map(\.reason) == [.conflict])
      #expect(setup.container.claimedNames() == [renewed])
    } else {
      try claim.renew()
      #expect(setup.container.claimedNames() == [renewed])
      try claim.acknowledge()
      #expect(try setup.drain() == ["B"])
      try setup.expectPolicy(copy)
    }
  }

  @Test(arguments: Copy.allCases)
  func `Delayed and pending: a delayed message whose pending name is taken is promoted once`(
    copy: Copy
  ) throws {
    let setup = try Setup()
    let id = try setup.mailbox.enqueue("A", notBefore: setup.clock.now.addingTimeInterval(5))
    let delayed = try #require(setup.container.names("delayed").first)
    let name = try #require(DelayedName(parsing: delayed))
    try setup.plant(copy, of: "delayed", delayed, at: "pending", name.message.fileName)
    let delivered = try setup.drain()
    #expect(delivered.sorted() == ["A", copy == .different ? "A, other bytes" : "A", "B"])
    #expect(setup.container.quarantined().map(\.id) == (copy == .different ? [id] : []))
    #expect(setup.recorder.count(.duplicateEntryDropped) == (copy == .different ? 0 : 1))
  }

  @Test
  func `A byte-equal copy of a message written under a higher payload limit is still a duplicate`()
    throws
  {
    let setup = try Setup()
    let big = String(repeating: "x", count: 300)
    try setup.mailbox.enqueue(big, notBefore: setup.clock.now.addingTimeInterval(5))
    let delayed = try #require(setup.container.names("delayed").first)
    let name = try #require(DelayedName(parsing: delayed))
    try setup.plant(.equal, of: "delayed", delayed, at: "pending", name.message.fileName)
    // Lowered below the file: readers still read up to the largest limit the mailbox had.
    try setup.mailbox.updateSettings { $0.maxPayloadBytes = 100 }
    #expect(try setup.drain().sorted() == ["A", "B", big])
    #expect(setup.container.quarantined().isEmpty)
    #expect(setup.recorder.count(.duplicateEntryDropped) == 1)
  }

  @Test func `Quarantine: a copy of a pending message in quarantine is never delivered`() throws {
    let setup = try Setup()
    let name = QuarantineName(
      micros: micros(setup.clock), reason: .malformed, id: setup.a, nonce: 7)
    try setup.plant(.equal, of: "pending", setup.pendingA.fileName, at: "quarantine", name.fileName)
    // A requeue of the copy while the message is pending writes nothing.
    #expect(
      try setup.mailbox.inspector.requeueQuarantined(name.fileName) == .alreadyPresent(setup.a))
    #expect(try setup.drain() == ["A", "B"])
    #expect(setup.container.names("quarantine") == [name.fileName])
  }

  @Test
  func `A planted copy under another pending name of the same id is delivered under each name`()
    throws
  {
    // Names cannot tell a copy under a new sequence from a new message with a caller-chosen id:
    // the claim path delivers each name (at least once per name); documented in FORMAT.md.
    let setup = try Setup()
    let other = PendingName(
      key: MessageKey(micros: setup.pendingA.key.micros, sequence: 99), id: setup.a, attempts: 0)
    try setup.plant(.equal, of: "pending", setup.pendingA.fileName, at: "pending", other.fileName)
    #expect(try setup.drain() == ["A", "B", "A"])
  }

  @Test func `C15: mailboxctl drain delivers A and B once each past a due copy of A in delayed`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let a = try mailbox.enqueue(Data("\"A\"".utf8)).id
    let b = try mailbox.enqueue(Data("\"B\"".utf8)).id
    let pending = try #require(container.pendingNames().first { $0.id == a })
    let due = DelayedName(dueMicros: pending.key.micros - 1_000_000, message: pending)
    try FileManager.default.copyItem(
      atPath: container.path("pending", pending.fileName),
      toPath: container.path("delayed", due.fileName))
    let result = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(result.status == 0)
    let ids = try jsonLines(result.stdout).map { $0["id"] as? String }
    #expect(ids == [a, b].map { $0.uuidString.lowercased() })
    #expect(container.names("pending").isEmpty)
    #expect(container.names("delayed").isEmpty)
    #expect(container.names("claimed").isEmpty)
    #expect(container.names("quarantine").isEmpty)
  }

  @Test
  func `Every move works through the link-then-unlink fallback when renameat2 lacks the flag`()
    throws
  {
    let setup = try Setup()
    let (delivered, _) = try FaultInjection.withRules(
      [.init(call: "renameat2", errno: EINVAL, count: Int.max)]
    ) { () throws -> [String] in
      try setup.mailbox.enqueue("C", delay: 5)
      let first = try #require(try setup.mailbox.claimPending(limit: 1).first)
      try first.renew()
      try first.release(retryAfter: 1)
      let second = try #require(try setup.mailbox.claimPending(limit: 1).first)
      try second.release()
      return try setup.drain()
    }
    #expect(delivered == ["A", "B", "C"])
    #expect(setup.recorder.count(.duplicateEntryDropped) == 0)
    #expect(setup.container.quarantined().isEmpty)
    try setup.container.expectDepth(0)
  }
}
