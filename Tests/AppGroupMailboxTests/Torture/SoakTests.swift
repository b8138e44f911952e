import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Random operations from 8 processes for a bounded time while the test kills (SIGKILL) and
/// restarts them at random, checking the invariants throughout and from the ledgers at the end.
/// About a minute in CI; `MAILBOX_SOAK_SECONDS` sets the length.
@Suite struct SoakTests {
  static var seconds: Double {
    let environment = ProcessInfo.processInfo.environment
    if let text = environment["MAILBOX_SOAK_SECONDS"], let value = Double(text) { return value }
    return environment["CI"] == "true" ? 60 : 15
  }

  static let maxMessages = 200
  /// What the running phase saw.
  struct RunPhase: Sendable {
    var ledgerCount: Int
    var kills: Int
    var samples: Int
    var violations: [String]
    var workerFailures: [String]
  }

  @Test func `Eight processes killed and restarted at random lose nothing and duplicate nothing`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailboxURL = container.url.appendingPathComponent("mailbox")
    let ledgers = container.url.appendingPathComponent("ledgers")
    try FileManager.default.createDirectory(at: ledgers, withIntermediateDirectories: true)
    let areas = ["pending", "claimed", "delayed"].map {
      mailboxURL.appendingPathComponent("AppGroupMailbox/soak/\($0)").path
    }
    // A minute of blocking work: on a thread of its own, off the cooperative pool that the
    // async tests running beside it need.
    let run = try await offCooperativePool {
      try Self.run(mailboxURL: mailboxURL, ledgers: ledgers, areas: areas)
    }
    let (ledgerCount, kills, samples) = (run.ledgerCount, run.kills, run.samples)
    #expect(run.workerFailures.isEmpty, "\(run.workerFailures.prefix(3))")
    #expect(run.violations.isEmpty, "\(run.violations.prefix(5))")
    // At rest, one file per id across the areas.
    var restingIDs: [UUID] = []
    for area in areas {
      for name in try FileManager.default.contentsOfDirectory(atPath: area) {
        let id =
          PendingName(parsing: name)?.id ?? ClaimedName(parsing: name)?.message.id
          ?? DelayedName(parsing: name)?.message.id
        restingIDs += id.map { [$0] } ?? []
      }
    }
    #expect(Set(restingIDs).count == restingIDs.count)
    #expect(restingIDs.count <= Self.maxMessages)

    // Drain what is left an hour later: every lease has run out, every delay is due.
    let mailbox: AppGroupMailbox<String> = try AppGroupMailbox(
      containerURL: mailboxURL, namespace: "soak", limits: .init(maxMessages: Self.maxMessages),
      overflowPolicy: .rejectNewest, notificationName: nil, messageType: nil, diagnostic: nil,
      durability: .full, permissions: .private,
      clock: FakeClock(start: Date().addingTimeInterval(3_600)).mailboxClock)
    try mailbox.performMaintenance()
    let remaining = try mailbox.claimPending()
    let left = remaining.map(\.message)

    let ledger = try SoakLedger(directory: ledgers)
    let (tried, enqueued, acknowledged, reimported) = (
      ledger.tried, ledger.enqueued, ledger.acknowledged, ledger.reimported
    )
    let acknowledgedSet = Set(acknowledged)
    #expect(!enqueued.isEmpty && kills > 0)
    // At least once: every returned enqueue was acknowledged or is still there. An acknowledge
    // that a SIGKILL interrupted may have removed its message without the ledger saying so.
    let interrupted = ledger.interrupted
    let lost = enqueued.subtracting(acknowledgedSet).subtracting(left).subtracting(interrupted)
    #expect(lost.isEmpty, "lost: \(lost.sorted().prefix(5))")
    // Nothing acknowledged comes back (unless re-imported after it was gone, which adds it
    // again by design); nothing left twice; nothing that was never sent.
    #expect(acknowledgedSet.subtracting(reimported).intersection(left).isEmpty)
    #expect(Set(left).count == left.count)
    let twice = Dictionary(grouping: acknowledged, by: { $0 }).filter { $0.value.count > 1 }.keys
    #expect(Set(twice).isSubset(of: reimported), "acknowledged twice: \(twice.prefix(5))")
    #expect(Set(left).isSubset(of: tried))
    #expect(FileManager.default.fileExists(atPath: areas[0]))
    #expect(
      (try FileManager.default.contentsOfDirectory(
        atPath: mailboxURL.appendingPathComponent("AppGroupMailbox/soak/quarantine").path)) == [])
    for claim in remaining { try claim.acknowledge() }
    try mailbox.enqueue("after")
    #expect(try mailbox.claimPending().map(\.message) == ["after"])
    print(
      "soak: \(Self.seconds) s, \(ledgerCount) worker processes, \(kills) SIGKILLs and restarts,",
      "\(tried.count) enqueues tried, \(enqueued.count) returned,",
      "\(acknowledged.count) acknowledged, \(interrupted.count) acknowledges cut by a kill,",
      "\(left.count) left at the end, \(samples) samples")
  }
}

extension SoakTests {
  /// Runs 8 workers until the soak time is up, killing and restarting them at random and
  /// sampling the depth bound from the names.
  static func run(mailboxURL: URL, ledgers: URL, areas: [String]) throws -> RunPhase {
    let end = Date().addingTimeInterval(Self.seconds)
    var random = SeededGenerator(seed: UInt64(getpid()))
    var ledgerCount = 0
    func startWorker() throws -> RunningProcess {
      ledgerCount += 1
      let ledger = ledgers.appendingPathComponent("\(ledgerCount).log")
      _ = FileManager.default.createFile(atPath: ledger.path, contents: nil)
      let remaining = max(0.5, end.timeIntervalSinceNow)
      return try Processes.start(
        Processes.product("MailboxTestWorker"),
        [
          "soak", mailboxURL.path, String(random.next() % 1_000_000), String(remaining),
          ledger.path,
        ])
    }
    var workers = try (0..<8).map { _ in try startWorker() }
    var kills = 0
    var samples = 0
    var violations: [String] = []
    while Date() < end {
      // Sample the depth bound from the names.
      samples += 1
      let depth = DepthSample.depth(of: areas)
      if depth > Self.maxMessages { violations.append("depth \(depth)") }
      if random.next() % 8 == 0 {
        let victim = Int(random.next() % UInt64(workers.count))
        workers[victim].signal(SIGKILL)
        _ = try workers[victim].finish(deadline: 30)
        kills += 1
        workers[victim] = try startWorker()
      }
      _ = poll(nil, 0, 25)  // Pace the sampling; correctness never waits on it.
    }
    var failures: [String] = []
    for worker in workers {
      let result = try worker.finish(deadline: Self.seconds + 60)
      if !(result.status == 0 || result.reason == .uncaughtSignal) {
        failures.append(result.stderr)
      }
    }
    return RunPhase(
      ledgerCount: ledgerCount, kills: kills, samples: samples, violations: violations,
      workerFailures: failures)
  }
}
