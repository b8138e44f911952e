import Foundation
import Glibc

@testable import AppGroupMailbox

/// The spool-state fuzzer: rounds of real worker processes (`MailboxTestWorker spool-fuzz`)
/// running random operations on one namespace while entries of the chosen ``PlantClass``es are
/// planted before and during each round and workers die by SIGKILL or in the middle of a mutating
/// system call; then the ledgers are checked against what is left. Everything random comes from
/// the seed (operations, plants, kill choices); only the interleaving of the processes is the
/// scheduler's. See Fixtures/spool-fuzz/README.md.
struct SpoolFuzz {
  var seed: UInt64
  /// Runs exactly this many rounds, or (nil) rounds until `seconds` have passed.
  var rounds: Int?
  var seconds: Double
  var classes: [PlantClass]
  static let workersPerRound = 3

  /// What one run did and found.
  struct Report: Sendable {
    var rounds = 0
    var operations = 0
    var plants: [String: Int] = [:]
    var kills = 0
    var crashes = 0
    var samples = 0
    var deliveries = 0
    var quarantinedMessages = 0
    var violations: [String] = []
    /// The plants of the round that first failed, for the report.
    var lastPlants: [String] = []
  }

  /// The command line that replays this run.
  func replay(rounds done: Int) -> String {
    "FUZZ_SEED=\(seed) FUZZ_ROUNDS=\(done) FUZZ_CLASSES=\(classes.map(\.rawValue).joined(separator: ","))"
  }

  /// Whether `id` is one a worker enqueued (see ``SoakSettings/id(for:)``), not a planted one.
  static func isWorkerID(_ id: UUID) -> Bool {
    id.uuidString.lowercased().dropFirst(9).hasPrefix("0000-4000-8000-")
  }

  /// The payload `p<worker>-<n>` whose id is `id`; nil for other ids.
  static func payload(for id: String) -> String? {
    let parts = id.split(separator: "-")
    guard parts.count == 5, parts[1] == "0000", let worker = UInt64(parts[0], radix: 16),
      let counter = UInt64(parts[4], radix: 16)
    else { return nil }
    return "p\(worker)-\(counter)"
  }

  func run(in container: URL) throws -> Report {
    let mailboxURL = container.appendingPathComponent("mailbox")
    let ledgers = container.appendingPathComponent("ledgers")
    try FileManager.default.createDirectory(at: ledgers, withIntermediateDirectories: true)
    let namespace = mailboxURL.appendingPathComponent(
      "AppGroupMailbox/\(SpoolFuzzSettings.namespace)")
    // Create the namespace before planting into it.
    _ = try openFinal(mailboxURL, clock: FakeClock(start: Date()))
    var planter = try SpoolFuzzPlanter(container: container, namespace: namespace)
    let areas = ["pending", "claimed", "delayed"].map { namespace.appendingPathComponent($0).path }
    var random = SeededGenerator(seed: seed)
    var report = Report()
    let end = Date().addingTimeInterval(seconds)
    var ledger = SoakLedger()
    while rounds.map({ report.rounds < $0 }) ?? (Date() < end) {
      let round = report.rounds
      report.rounds += 1
      var plants: [String] = []
      let plant = { (random: inout SeededGenerator) in
        guard !classes.isEmpty else { return }
        let kind = classes[Int(random.next() % UInt64(classes.count))]
        plants.append(planter.plant(kind, &random))
        report.plants[kind.rawValue, default: 0] += 1
      }
      for _ in 0..<(random.next() % 4) { plant(&random) }
      var workers: [RunningProcess] = []
      var files: [URL] = []
      for slot in 0..<Self.workersPerRound {
        let operations = 20 + Int(random.next() % 30)
        let crash = random.next() % 3 == 0 ? Int(random.next() % UInt64(operations)) : -1
        let file = ledgers.appendingPathComponent("\(round)-\(slot).log")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        files.append(file)
        report.operations += operations
        workers.append(
          try Processes.start(
            Processes.product("MailboxTestWorker"),
            [
              "spool-fuzz", mailboxURL.path, SpoolFuzzSettings.namespace,
              String(SpoolFuzzSettings.maxMessages), String(SpoolFuzzSettings.messageLifetime),
              String(SpoolFuzzSettings.maxQuarantinedFiles), String(random.next()),
              String(round * Self.workersPerRound + slot), String(operations), String(crash),
              file.path,
            ]))
      }
      // Mid-round plants and kills: chosen by a generator of their own, as many as the round's
      // length allows, so the round's other choices stay the seed's.
      var during = SeededGenerator(seed: random.next())
      while workers.contains(where: { $0.process.isRunning }) {
        report.samples += 1
        let depth = DepthSample.depth(
          of: areas, lock: namespace.appendingPathComponent("state").path,
          counting: { Self.isWorkerID($0) && !planter.copiedIDs.contains($0) })
        if depth > SpoolFuzzSettings.maxMessages {
          report.violations.append("round \(round): depth \(depth) over the bound")
        }
        switch during.next() % 16 {
        case 0, 1: plant(&during)
        case 2:
          let victim = workers[Int(during.next() % UInt64(workers.count))]
          if victim.process.isRunning {
            victim.signal(SIGKILL)
            report.kills += 1
          }
        default: break
        }
        _ = poll(nil, 0, 5)
      }
      for worker in workers {
        let result = try worker.finish(deadline: 120)
        if result.status == SpoolFuzzSettings.crashStatus && result.reason == .exit {
          report.crashes += 1
        } else if !(result.status == 0 || result.reason == .uncaughtSignal) {
          report.violations.append("round \(round): worker failed: \(result.stderr)")
        }
      }
      let before = ledger.errors.count
      for file in files { try ledger.read(file) }
      report.violations += ledger.errors.dropFirst(before).map { "round \(round): \($0)" }
      report.lastPlants = plants
      if !report.violations.isEmpty { return report }
    }
    try check(mailboxURL, namespace, ledger, planter, &report)
    return report
  }

  /// Opens the mailbox as the workers do, with `clock`.
  func openFinal(_ url: URL, clock: FakeClock) throws -> AppGroupMailbox<String> {
    try AppGroupMailbox(
      containerURL: url, namespace: SpoolFuzzSettings.namespace,
      limits: .init(
        maxMessages: SpoolFuzzSettings.maxMessages,
        messageLifetime: SpoolFuzzSettings.messageLifetime,
        maxQuarantinedFiles: SpoolFuzzSettings.maxQuarantinedFiles),
      overflowPolicy: .rejectNewest, notificationName: nil, messageType: nil, diagnostic: nil,
      durability: .full, permissions: .private, clock: clock.mailboxClock)
  }
}

/// The limits the fuzz workers and the final check open the mailbox with.
enum SpoolFuzzSettings {
  static let namespace = "fuzz"
  static let maxMessages = 48
  /// Ten years: imports dated within a month of now never expire during a run.
  static let messageLifetime: TimeInterval = 86_400 * 3_650
  /// Quarantine is never trimmed during a run, so every quarantined message is accounted for.
  static let maxQuarantinedFiles = 1_000_000
  /// How a worker ended by its crash point exits (`CrashPoint.exitStatus`).
  static let crashStatus: Int32 = 86
}
