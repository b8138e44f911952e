import Foundation
import Testing

@testable import AppGroupMailbox

/// Spool states from Fixtures/ (see Fixtures/README.md), copied into a fresh container.
@Suite struct FixtureTests {
  /// 2026-01-01T00:00:00Z in microseconds: the fixtures' time base.
  static let base: Int64 = 1_767_225_600_000_000

  static let fixtures = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures")

  /// Copies the fixture `name` (a container) into `container`.
  static func install(_ name: String, into container: TemporaryContainer) throws {
    let source = fixtures.appendingPathComponent(name)
    for item in try FileManager.default.contentsOfDirectory(atPath: source.path) {
      try FileManager.default.copyItem(
        at: source.appendingPathComponent(item), to: container.url.appendingPathComponent(item))
    }
  }

  static func clock(at micros: Int64) -> FakeClock {
    FakeClock(start: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
  }

  @Test func `The valid spool's files are exactly what this version writes`() throws {
    let container = try TemporaryContainer()
    try Self.install("valid-spool-v1", into: container)
    for area in ["pending", "claimed"] {
      for fileName in container.names(area) {
        let name = try #require(
          PendingName(parsing: fileName) ?? ClaimedName(parsing: fileName)?.message)
        let bytes = try Data(contentsOf: container.area(area).appendingPathComponent(fileName))
        let (header, range) = try Envelope.decode(Array(bytes))
        let message = try JSONDecoder().decode(String.self, from: bytes[range])
        #expect(
          try messageFile(message, id: name.id, enqueuedAt: name.key.micros) == bytes,
          "\(fileName)")
        #expect(header.enqueuedAt == name.key.micros)
      }
    }
    #expect(
      container.counters()
        == SpoolCounters(sequence: 5, depth: 4, newestImplicitMicros: Self.base + 3_000_000))
  }

  @Test
  func `The valid spool delivers its pending messages in order and keeps its claim and quarantine`()
    throws
  {
    let container = try TemporaryContainer()
    try Self.install("valid-spool-v1", into: container)
    let clock = Self.clock(at: Self.base + 600_000_000)
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: diagnostics)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["first", "second", "fourth"])
    #expect(claims.map(\.deliveryCount) == [1, 2, 1])
    #expect(
      claims.map(\.id.uuidString) == [
        "10000000-0000-4000-8000-000000000001", "10000000-0000-4000-8000-000000000002",
        "10000000-0000-4000-8000-000000000004",
      ])
    #expect(claims.map { micros($0.enqueuedAt) - Self.base } == [0, 1_000_000, 3_000_000])
    #expect(container.claimedNames().count == 4)
    // The claimed (3) and quarantined (5) ids are present: importing them writes nothing.
    for number in [3, 5] {
      let id = UUID(uuidString: "10000000-0000-4000-8000-00000000000\(number)")!
      try mailbox.enqueue("again", id: id)
    }
    #expect(container.names("pending") == [])
    try mailbox.enqueue("fifth")
    #expect(
      container.pendingNames().map(\.key) == [MessageKey(micros: micros(clock.now), sequence: 6)])
    #expect(
      container.counters()
        == SpoolCounters(sequence: 6, depth: 5, newestImplicitMicros: micros(clock.now)))
    for claim in claims { try claim.acknowledge() }
    // The fixture's claim runs until 01:00; after that it is restored and delivered again.
    clock.advance(3_000.000_001)
    let later = try mailbox.claimPending()
    #expect(later.map(\.message) == ["third", "fifth"])
    #expect(later.map(\.deliveryCount) == [2, 1])
    #expect(diagnostics.all == [.abandonedClaimRecovered])
    #expect(
      container.names("quarantine") == [
        "1767225604000000-malformed-10000000-0000-4000-8000-000000000005-0badf00d.q"
      ])
  }

  enum StateDamage: String, CaseIterable, Sendable { case torn, empty, missing }

  @Test(arguments: StateDamage.allCases)
  func
    `Crash leftovers: the abandoned claim comes back first, stale temporary files go, the state is rebuilt`(
      damage: StateDamage
    ) throws
  {
    let container = try TemporaryContainer()
    try Self.install("crash-leftovers-v1", into: container)
    let state = container.url.appendingPathComponent("AppGroupMailbox/jobs/state")
    switch damage {
    case .torn: #expect(try Data(contentsOf: state) == Data("1 00000000000000000002 0000".utf8))
    case .empty: try Data().write(to: state)
    case .missing: try FileManager.default.removeItem(at: state)
    }
    let clock = Self.clock(at: Self.base + 1_200_000_000)
    try container.setModified(
      "tmp", "4242-8f3a9c1d2e4b5a60.tmp", to: clock.now.addingTimeInterval(-3_600))
    try container.setModified(
      "tmp", "4243-0000000000000001.tmp", to: clock.now.addingTimeInterval(-60))
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), clock: clock, diagnostics: diagnostics)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["abandoned", "waiting"])
    #expect(claims.map(\.deliveryCount) == [2, 1])
    // The first claim also sweeps the stale temporary file (claims sweep tmp/ once a minute).
    #expect(diagnostics.all == [.abandonedClaimRecovered, .staleTemporaryFileRemoved])
    #expect(container.names("tmp") == ["4243-0000000000000001.tmp"])
    // Temporary files are not messages: the bound of 3 still takes one more.
    try mailbox.enqueue("new")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue("over") }
    #expect(
      container.counters()
        == SpoolCounters(sequence: 3, depth: 3, newestImplicitMicros: micros(clock.now)))
    try mailbox.performMaintenance()
    #expect(container.names("tmp") == ["4243-0000000000000001.tmp"])
    #expect(diagnostics.count(.staleTemporaryFileRemoved) == 1)
    for claim in claims { try claim.acknowledge() }
    #expect(try mailbox.claimPending().map(\.message) == ["new"])
  }
}
