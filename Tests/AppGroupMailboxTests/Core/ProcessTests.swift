import Foundation
import Glibc
import Synchronization
import Testing

@testable import AppGroupMailbox

/// Real processes: exclusive claims (C01), dead consumers (C02), interrupted imports (C13),
/// churn with a lister (C09), and the "Done when" runs.
@Suite struct ProcessTests {
  static var worker: URL { Processes.product("MailboxTestWorker") }

  /// `value count` lines of finished workers, as pairs.
  static func deliveries(_ results: [Finished]) -> [(value: Int, count: Int)] {
    results.flatMap(\.lines).map { line in
      let parts = line.split(separator: " ")
      return (Int(parts[0])!, Int(parts[1])!)
    }
  }

  @Test func `C01: eight consumer processes deliver 2,000 messages exactly once without errors`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxMessages: 2_000))
    for value in 0..<2_000 { try mailbox.enqueue(value) }
    let done = container.url.appendingPathComponent("done").path
    _ = FileManager.default.createFile(atPath: done, contents: nil)
    let consumers = try (0..<8).map { _ in
      try Processes.start(Self.worker, ["core-consume", container.url.path, "jobs", done, "1"])
    }
    let results = try consumers.map { try $0.finish() }
    #expect(results.map(\.status) == Array(repeating: 0, count: 8))
    #expect(results.map(\.stderr) == Array(repeating: "", count: 8))
    let delivered = Self.deliveries(results)
    #expect(delivered.map(\.value).sorted() == Array(0..<2_000))
    #expect(Set(delivered.map(\.count)) == [1])
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }

  @Test func `C01: a consumer opens only files it renamed into claimed itself`() async throws {
    let container = try TemporaryContainer()
    let producer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxMessages: 400))
    for value in 0..<400 { try producer.enqueue(value) }
    let results = try await withThrowingTaskGroup(of: ([Int], [String], [String]).self) { group in
      for _ in 0..<4 {
        let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
        group.addTask {
          let recorder = SystemCallRecording.Recorder()
          let values = try SystemCallRecording.recording(recorder) { () throws -> [Int] in
            var values: [Int] = []
            while true {
              let claims = try mailbox.claimPending(limit: 1)
              if claims.isEmpty { return values }
              for claim in claims {
                values.append(claim.message)
                try claim.acknowledge()
              }
            }
          }
          let claimed = mailbox.spool.directories.claimed
          let calls = recorder.all
          let renamedIn = calls.filter {
            $0.name == "renameat2" && $0.targetDescriptor == claimed && ($0.result ?? -1) == 0
          }.compactMap(\.targetPath)
          let opened = calls.filter {
            $0.name == "openat" && $0.descriptor == claimed && $0.path != "."
          }.compactMap(\.path)
          return (values, renamedIn, opened)
        }
      }
      var all: [([Int], [String], [String])] = []
      for try await result in group { all.append(result) }
      return all
    }
    #expect(results.flatMap(\.0).sorted() == Array(0..<400))
    for (values, renamedIn, opened) in results {
      #expect(opened.count == values.count)
      #expect(Set(opened).isSubset(of: Set(renamedIn)))
    }
  }

  @Test
  func
    `C02: a claim of a consumer killed with SIGKILL is delivered once more after the timeout, ahead of B`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: .init(claimTimeout: 1))
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let consumer1 = try InteractiveWorker(["core-session", container.url.path, "jobs", "1"])
    let consumer2 = try InteractiveWorker(["core-session", container.url.path, "jobs", "1"])
    #expect(try consumer2.send("maintain") == "ok")  // started and ready
    #expect(try consumer1.send("claim 1") == "claimed A:1")
    let claimedAt = Date()
    consumer1.kill9()
    let lease = try #require(container.claimedNames().first?.leaseUntilMicros)
    _ = waitUntil { Date() >= claimedAt.addingTimeInterval(0.3) }
    let early = try consumer2.send("claim 0")
    // Precondition of the case: this claim ran before the lease ended.
    try #require(micros(Date()) < lease)
    #expect(early == "claimed B:1")
    #expect(try consumer2.send("release B") == "ok")
    _ = waitUntil { Date() >= claimedAt.addingTimeInterval(1.5) }
    #expect(try consumer2.send("claim 0") == "claimed A:2 B:2")
    #expect(try consumer2.send("ack A") == "ok")
    #expect(try consumer2.send("ack B") == "ok")
    #expect(try consumer2.finish() == 0)
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }

  @Test
  func
    `C03: between processes, the slow holder's late acknowledge and release fail and the new holder's acknowledge works`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: .init(claimTimeout: 2))
    try mailbox.enqueue("A")
    let consumer1 = try InteractiveWorker(["core-session", container.url.path, "jobs", "2"])
    let consumer2 = try InteractiveWorker(["core-session", container.url.path, "jobs", "2"])
    #expect(try consumer1.send("claim 0") == "claimed A:1")
    var polled: [String] = []
    #expect(
      try waitUntil(deadline: 30) {
        let answer = try consumer2.send("claim 0")
        if answer != "claimed" { polled.append(answer) }
        return answer != "claimed"
      })
    #expect(polled == ["claimed A:2"])
    let current = container.names("claimed")
    #expect(current.count == 1)
    #expect(try consumer1.send("ack A") == "error claimNoLongerExists")
    #expect(try consumer1.send("release A") == "error claimNoLongerExists")
    #expect(container.names("claimed") == current)
    #expect(container.names("pending") == [])
    #expect(try consumer2.send("ack A") == "ok")
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
    #expect(try consumer1.finish() == 0)
    #expect(try consumer2.finish() == 0)
  }

  @Test func `C03: between processes, a holder renewing every second is never redelivered`() throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: .init(claimTimeout: 2))
    try mailbox.enqueue("A")
    let consumer1 = try InteractiveWorker(["core-session", container.url.path, "jobs", "2"])
    let consumer2 = try InteractiveWorker(["core-session", container.url.path, "jobs", "2"])
    #expect(try consumer1.send("claim 0") == "claimed A:1")
    var renewed = Date()
    var answers: [String] = []
    for _ in 0..<5 {
      _ = waitUntil { Date() >= renewed.addingTimeInterval(1) }
      #expect(try consumer1.send("renew A") == "ok")
      renewed = Date()
      answers.append(try consumer2.send("claim 0"))
    }
    #expect(answers == Array(repeating: "claimed", count: 5))
    #expect(try consumer1.send("ack A") == "ok")
    #expect(container.names("claimed") == [])
    #expect(container.names("pending") == [])
  }

  @Test
  func `C02: four processes sweeping the same abandoned claims at once make one copy of each`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(claimTimeout: 1))
    for value in 0..<20 { try mailbox.enqueue(value) }
    let holder = try Processes.start(
      Self.worker, ["core-hold", container.url.path, "jobs", "1", "20"])
    #expect(waitUntil { container.claimedNames().count == 20 })
    holder.signal(SIGKILL)
    _ = try? holder.finish()
    let deadline = try #require(container.claimedNames().map(\.leaseUntilMicros).max())
    #expect(waitUntil { micros(Date()) > deadline })
    let go = container.url.appendingPathComponent("go").path
    let sweepers = try (0..<4).map { _ in
      try Processes.start(Self.worker, ["core-maintain", container.url.path, "jobs", "1", go])
    }
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    let results = try sweepers.map { try $0.finish() }
    #expect(results.map(\.status) == [0, 0, 0, 0])
    #expect(container.names("claimed") == [])
    #expect(container.names("quarantine") == [])
    #expect(container.pendingNames().count == 20)
    #expect(Set(container.pendingNames().map(\.id)).count == 20)
    #expect(Set(container.pendingNames().map(\.attempts)) == [1])
    #expect(container.counters()?.depth == 20)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == Array(0..<20))
    #expect(Set(claims.map(\.deliveryCount)) == [2])
  }

  @Test
  func
    `A consumer killed with SIGKILL while holding claims has each of them delivered exactly once more`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    for value in 0..<10 { try mailbox.enqueue(value) }
    let holder = try InteractiveWorker(["core-hold", container.url.path, "jobs", "2", "5"])
    let held = try (0..<6).map { _ in try holder.readLine() }
    #expect(held == ["0 1", "1 1", "2 1", "3 1", "4 1", "held"])
    #expect(container.claimedNames().count == 5)
    holder.kill9()
    #expect(holder.process.terminationReason == .uncaughtSignal)
    let drain = try Processes.runWorker(["core-drain", container.url.path, "jobs", "2", "10"])
    #expect(drain.status == 0)
    let delivered = Self.deliveries([drain]).sorted { $0.value < $1.value }
    #expect(delivered.map(\.value) == Array(0..<10))
    #expect(delivered.map(\.count) == [2, 2, 2, 2, 2, 1, 1, 1, 1, 1])
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }

  @Test
  func
    `Four producer and four consumer processes move 20,000 messages, none lost, none duplicated`()
    throws
  {
    let container = try TemporaryContainer()
    let done = container.url.appendingPathComponent("done").path
    let consumers = try (0..<4).map { _ in
      try Processes.start(Self.worker, ["core-consume", container.url.path, "jobs", done, "50"])
    }
    let producers = try (0..<4).map { index in
      try Processes.start(
        Self.worker,
        ["core-produce", container.url.path, "jobs", String(index * 5_000), "5000", "full"])
    }
    let produced = try producers.map { try $0.finish(deadline: 600) }
    #expect(produced.map(\.status) == [0, 0, 0, 0])
    _ = FileManager.default.createFile(atPath: done, contents: nil)
    let consumed = try consumers.map { try $0.finish(deadline: 600) }
    #expect(consumed.map(\.status) == [0, 0, 0, 0])
    #expect(consumed.map(\.stderr) == ["", "", "", ""])
    let delivered = Self.deliveries(consumed)
    #expect(delivered.count == 20_000)
    #expect(delivered.map(\.value).sorted() == Array(0..<20_000))
    #expect(Set(delivered.map(\.count)) == [1])
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }

  @Test
  func
    `A producer killed just after publishing leaves counters that never hand out its sequence again`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try mailbox.enqueue(1)
    let crashed = try Processes.runWorker(["core-crash-enqueue", container.url.path, "jobs", "2"])
    #expect(crashed.reason == .uncaughtSignal)
    #expect(crashed.lines == [])
    #expect(container.pendingNames().map(\.key.sequence) == [1, 2])
    // This instance validated its counters before the crash and trusts the state file now.
    try mailbox.enqueue(3)
    #expect(container.pendingNames().map(\.key.sequence) == [1, 2, 3])
    #expect(container.counters()?.depth == 3)
    #expect(try mailbox.claimPending().map(\.message) == [1, 2, 3])
  }

  @Test func `C13: an import killed at depth 50 and run again stores each of the 100 ids once`()
    throws
  {
    let container = try TemporaryContainer()
    let base = String(Int(Date().timeIntervalSince1970) - 3_600)
    let importer = try Processes.start(
      Self.worker, ["core-import", container.url.path, "jobs", "100", base, "50"])
    #expect(waitUntil { container.pendingNames().count == 50 && container.names("tmp").count == 1 })
    importer.signal(SIGKILL)
    _ = try importer.finish()
    #expect(container.pendingNames().count == 50)
    let leftover = container.names("tmp")
    #expect(leftover.count == 1)
    // With maxMessages 100, the leftover temporary file must not block the last message.
    let again = try Processes.runWorker(["core-import", container.url.path, "jobs", "100", base])
    #expect(again.status == 0)
    #expect(again.lines == ["imported"])
    #expect(container.pendingNames().map(\.id) == (0..<100).map(importID))
    #expect(container.names("tmp") == leftover)
    #expect(container.counters()?.depth == 100)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == Array(0..<100))
    #expect(
      claims.map { micros($0.enqueuedAt) }
        == (0..<100).map { (Int64(base)! + 30 * Int64($0)) * 1_000_000 })
  }

  @Test func `C13: an id claimed during the re-run counts as present`() throws {
    let container = try TemporaryContainer()
    let base = String(Int(Date().timeIntervalSince1970) - 3_600)
    let first = try Processes.runWorker(["core-import", container.url.path, "jobs", "20", base])
    #expect(first.status == 0)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let claims = try mailbox.claimPending(limit: 11)
    for claim in claims where claim.message != 10 { try claim.release() }
    let held = try #require(claims.first { $0.message == 10 })
    #expect(held.id == importID(10))
    let again = try Processes.runWorker(["core-import", container.url.path, "jobs", "100", base])
    #expect(again.status == 0)
    #expect(container.pendingNames().map(\.id) == (0..<100).filter { $0 != 10 }.map(importID))
    #expect(container.claimedNames().map(\.message.id) == [importID(10)])
    #expect(container.counters()?.depth == 100)
    try held.acknowledge()
    try container.expectDepth(99)
  }

  @Test func `C13: two importers running the same list at once store one copy of each id`() throws {
    let container = try TemporaryContainer()
    let base = String(Int(Date().timeIntervalSince1970) - 3_600)
    let importers = try (0..<2).map { _ in
      try Processes.start(Self.worker, ["core-import", container.url.path, "jobs", "100", base])
    }
    let results = try importers.map { try $0.finish() }
    #expect(results.map(\.status) == [0, 0])
    #expect(container.pendingNames().map(\.id) == (0..<100).map(importID))
    #expect(container.names("tmp") == [])
    #expect(container.counters()?.depth == 100)
  }

  @Test
  func `C09: thirty seconds of producers, consumers and a lister lose nothing and fail nothing`()
    throws
  {
    let container = try TemporaryContainer()
    // The case is about entries vanishing, not the bound: on a loaded machine the consumers can
    // fall 100 messages behind, and a producer's mailboxFull would fail the run.
    _ =
      try container.mailbox(Int.self, limits: .init(maxMessages: 1_000_000)) as AppGroupMailbox<Int>
    let done = container.url.appendingPathComponent("done").path
    let lister = try Processes.start(Self.worker, ["core-list", container.url.path, "jobs", done])
    let consumers = try (0..<8).map { _ in
      try Processes.start(Self.worker, ["core-churn-consume", container.url.path, "jobs", done])
    }
    let producers = try (0..<4).map { index in
      try Processes.start(
        Self.worker,
        ["core-churn-produce", container.url.path, "jobs", "30", String(index * 10_000_000)])
    }
    let produced = try producers.map { try $0.finish(deadline: 300) }
    _ = FileManager.default.createFile(atPath: done, contents: nil)
    let consumed = try consumers.map { try $0.finish(deadline: 300) }
    let listed = try lister.finish(deadline: 60)
    for result in produced + consumed + [listed] {
      #expect(result.status == 0)
      #expect(result.stderr == "")
    }
    let enqueued = produced.flatMap(\.lines).map { Int($0)! }
    let acknowledged = consumed.flatMap(\.lines).map { Int($0)! }
    #expect(enqueued.count > 0)
    #expect(acknowledged.sorted() == enqueued.sorted())
    #expect(Set(acknowledged).count == acknowledged.count)
    #expect(listed.lines.count == 1)
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
    try container.expectDepth(0)
  }
}
