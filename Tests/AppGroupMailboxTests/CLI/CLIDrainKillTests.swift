import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// SIGKILL at random points: drain with a long-running handler, and `drain --output FILE`, each
/// killed again and again over 5,000 messages and restarted. Every message must be handled at
/// least once, the mailbox must end empty with nothing acknowledged twice, and a message may be
/// handled again only when it was in flight at a kill.
@Suite struct CLIDrainKillTests {
  static let count = 5_000
  static let kills = 8
  static let jobs = 4

  /// Enqueues `count` messages (relaxed durability: the kills are of processes, not power).
  func fill(_ container: TemporaryContainer) throws -> Set<String> {
    let mailbox = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", limits: .init(maxMessages: 10_000),
      durability: .relaxed)
    return Set(
      try (0..<Self.count).map {
        try mailbox.enqueue(Data("{\"n\":\($0)}".utf8)).id.uuidString.lowercased()
      })
  }

  /// Starts drain `arguments`, waits until `progress()` reaches `target` (or drain exits), then
  /// SIGKILLs it; returns its stderr.
  func killedRun(_ arguments: [String], at target: Int, progress: () throws -> Int) throws
    -> String
  {
    let drain = try Mailboxctl.start(arguments)
    _ = try waitUntil(deadline: 120) { try progress() >= target || !drain.process.isRunning }
    drain.signal(SIGKILL)
    let result = try drain.finish()
    return result.stderr
  }

  /// Runs drain `arguments` until nothing is left, waiting out the leases the killed runs left
  /// between runs; returns every run's stderr.
  func finish(_ container: TemporaryContainer, _ arguments: [String]) throws -> String {
    var stderr = ""
    for _ in 0..<20 {
      let result = try Mailboxctl.run(arguments, deadline: 300)
      stderr += result.stderr
      #expect(result.status == 0)
      let left = try container.rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
      if left.isEmpty { break }
      if let lease = left.compactMap(\.leaseExpiresAt).max() {
        #expect(waitUntil(deadline: 30) { Date() > lease })
      }
    }
    return stderr
  }

  /// ``kills`` runs of drain `arguments`, each SIGKILLed once `progress()` has grown by a
  /// random amount (seeded; the seed is printed, and `AGM_KILL_SEED=<seed>` replays it);
  /// returns their stderr.
  func killRepeatedly(_ arguments: [String], progress: () throws -> Int) throws -> String {
    let seed =
      ProcessInfo.processInfo.environment["AGM_KILL_SEED"].flatMap { UInt64($0) }
      ?? UInt64.random(in: 1...UInt64.max)
    print("CLIDrainKillTests seed \(seed) (AGM_KILL_SEED=\(seed) replays it)")
    var generator = SeededGenerator(seed: seed)
    var stderr = ""
    var target = 0
    for _ in 0..<Self.kills {
      target += Int.random(in: 50...(Self.count / Self.kills - 50), using: &generator)
      stderr += try killedRun(arguments, at: target, progress: progress)
    }
    return stderr
  }

  func lines(_ file: URL) -> Int {
    guard let data = FileManager.default.contents(atPath: file.path) else { return 0 }
    return data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
  }

  @Test func `SIGKILL during a long-running handler loses nothing and acknowledges once`() throws {
    let container = try TemporaryContainer()
    let ids = try fill(container)
    let log = container.url.appendingPathComponent("log")
    let handler = try PythonHandler.write(
      PythonHandler.logging(to: log, sync: false), in: container)
    let arguments =
      ["drain"] + container.arguments() + [
        "--relaxed", "--claim-timeout", "2", "--jobs", String(Self.jobs),
      ] + handler
    var stderr = try killRepeatedly(arguments) { try PythonHandler.records(log).count }
    stderr += try finish(container, arguments)
    let records = try PythonHandler.records(log)
    #expect(Set(records.map(\.id)) == ids)
    #expect(try container.rawMailbox().inspector.entries(in: [.quarantined]).isEmpty)
    // An acknowledge of a finished message would fail and say so.
    #expect(!stderr.contains("before the acknowledge"))
    // Handled again only when in flight at a kill: at most --jobs per killed handler.
    var seen: [String: Int32] = [:]
    var superseded: [Int32: Int] = [:]
    for record in records {
      if let earlier = seen[record.id] { superseded[earlier, default: 0] += 1 }
      seen[record.id] = record.pid
    }
    #expect(superseded.values.allSatisfy { $0 <= Self.jobs })
    #expect(superseded.values.reduce(0, +) <= Self.kills * Self.jobs)
    #expect(records.count == Self.count + superseded.values.reduce(0, +))
  }

  @Test func `SIGKILL during drain --output leaves every message in the file or the mailbox`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try fill(container)
    let file = container.url.appendingPathComponent("out.jsonl")
    let arguments =
      ["drain"] + container.arguments() + [
        "--relaxed", "--claim-timeout", "2", "--output", file.path,
      ]
    var stderr = try killRepeatedly(arguments) { lines(file) }
    stderr += try finish(container, arguments)
    #expect(!stderr.contains("before the acknowledge"))
    let text = try String(contentsOf: file, encoding: .utf8)
    // A line cut by a kill is ended by the next run and is not a message line.
    let found = text.split(separator: "\n").compactMap { line -> String? in
      guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)),
        let fields = object as? [String: Any]
      else { return nil }
      return fields["id"] as? String
    }
    #expect(Set(found) == ids)
    // Written again only when claimed by a killed run and not yet acknowledged: at most one
    // batch (256) per kill.
    #expect(found.count - ids.count <= Self.kills * 256)
  }
}
