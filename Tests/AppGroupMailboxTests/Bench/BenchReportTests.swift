import AppGroupMailbox
import Foundation
import Glibc
import Synchronization
import Testing

@testable import mailbox_bench

/// The benchmark's own reporting (Sources/mailbox-bench): each ratio with its spread over
/// rounds, the target verdicts, which side goes first, and the wake-up measure's handling of a
/// stamp it cannot parse. No timing is asserted: speed targets live in the benchmark.
@Suite struct BenchReportTests {
  @Test func `A row's ratio is the median of its rounds' ratios and its spread their extremes`() {
    let row = Measurement(
      group: "throughput", name: "full cycle", durability: "relaxed", size: 256, unit: "msg/s",
      library: 20, baseline: 20, libraryRounds: [10, 30, 20], baselineRounds: [20, 20, 10])
    #expect(row.roundRatios == [0.5, 1.5, 2.0])
    #expect(row.ratio == 1.5)
    #expect(row.spread?.low == 0.5)
    #expect(row.spread?.high == 2.0)
    #expect(Report.line(row).contains("1.50  0.50-2.00"))
    let medians = Measurement(
      group: "memory", name: "peak", durability: "-", size: 0, unit: "MiB", library: 3,
      baseline: 4)
    #expect(medians.ratio == 0.75)
    #expect(medians.spread == nil)
  }

  @Test func `A target is judged by the median and says when its rounds lie on both sides`() {
    let row = Measurement(
      group: "throughput", name: "claim+read+ack", durability: "full", size: 256, unit: "msg/s",
      library: 9, baseline: 10, libraryRounds: [7, 9, 10], baselineRounds: [10, 10, 10])
    let met = Target.ratio("x", row, 0.8, why: "because")
    #expect(met.verdict == "met")
    #expect(met.figure == "0.90 (rounds 0.70-1.00), rounds on both sides")
    #expect(met.why.isEmpty)
    let missed = Target.ratio("y", row, 0.95, why: "because")
    #expect(missed.verdict == "NOT met")
    #expect(missed.printed(json: false).hasSuffix("NOT met\n        why: because"))
    let atMost = Target.ratio("z", row, atLeast: false, 0.5, why: "because")
    #expect(atMost.verdict == "NOT met")
    #expect(atMost.figure == "0.90 (rounds 0.70-1.00)")
  }

  @Test func `A target without a figure is not met and says why`() {
    let target = Target.ratio("x", nil, 0.8, why: "because")
    #expect(target.verdict == "NOT met")
    #expect(target.figure == "not measured")
    #expect(!target.why.isEmpty)
  }

  @Test func `Two runs are compared ratio by ratio, matched by row`() {
    func row(_ measure: String, _ durability: String, _ ratio: Double) -> [String: Any] {
      [
        "group": "throughput", "measure": measure, "durability": durability, "size": 256,
        "against": "C", "ratio": ratio,
      ]
    }
    let first = [row("enqueue", "full", 0.5), row("enqueue", "relaxed", 1.0)]
    let second = [
      row("enqueue", "relaxed", 1.25), row("enqueue", "full", 0.55),
      ["group": "target", "target": "x", "verdict": "met"],
    ]
    let pairs = Compare.pairs(first, second)
    #expect(
      pairs.map(\.key) == [
        "throughput | enqueue | full | 256 | C", "throughput | enqueue | relaxed | 256 | C",
      ])
    #expect(pairs.map { ($0.apart * 100).rounded() } == [10, 25])
  }

  @Test func `Rounds alternate which side goes first`() throws {
    var order: [String] = []
    try Rounds.interleave(4) {
      order.append("C")
    } library: {
      order.append("lib")
    }
    #expect(order == ["C", "lib", "lib", "C", "C", "lib", "lib", "C"])
  }

  @Test func `The C wake-up consumer drops a stamp it cannot parse`() throws {
    let directory = try BenchDirectory()
    let root = directory.path + "/c"
    _ = try BaselineSide(root: root, durable: false)
    let out = root + "/latencies"
    let done = try Self.start { _ = try Workers.run(["_wake-c", root, "3", out]) }
    try Self.waitFor(root + "/ready")
    for (index, content) in ["not a stamp", String(nowNanoseconds()), "12x"].enumerated() {
      try content.write(toFile: "\(root)/tmp/\(index)", atomically: false, encoding: .utf8)
      #expect(rename("\(root)/tmp/\(index)", "\(root)/pending/\(index)") == 0)
    }
    try done()
    let latencies = try Children.result(out).compactMap { Int64($0) }
    #expect(latencies.count == 1)
    #expect(latencies.allSatisfy { $0 >= 0 })
  }

  @Test func `The library wake-up consumer drops a stamp it cannot parse`() throws {
    let directory = try BenchDirectory()
    let container = directory.path + "/lib"
    let side = try LibrarySide(container: container, durability: .relaxed)
    let ready = directory.path + "/ready"
    let out = directory.path + "/latencies"
    let done = try Self.start {
      try LibraryWake.consume(container: container, samples: 2, readyPath: ready, out: out)
    }
    try Self.waitFor(ready)
    try side.mailbox.enqueue("not a stamp")
    try side.mailbox.enqueue(String(nowNanoseconds()))
    try done()
    let latencies = try Children.result(out).compactMap { Int64($0) }
    #expect(latencies.count == 1)
    #expect(latencies.allSatisfy { $0 >= 0 })
  }

  /// How long a consumer may take to start or finish (a correctness deadline, not a speed one).
  static let deadlineNanoseconds: Int64 = 60_000_000_000

  /// Runs `body` on another thread; the returned function waits for it (with the deadline) and
  /// rethrows what it threw.
  static func start(_ body: @escaping @Sendable () throws -> Void) throws -> () throws -> Void {
    let finished = DispatchSemaphore(value: 0)
    let failure = Mutex<String?>(nil)
    Thread.detachNewThread {
      do { try body() } catch { failure.withLock { $0 = "\(error)" } }
      finished.signal()
    }
    return {
      let seconds = Double(Self.deadlineNanoseconds) / 1e9
      guard finished.wait(timeout: .now() + seconds) == .success else {
        throw BenchError.failed("the consumer did not finish within \(seconds) s")
      }
      if let message = failure.withLock({ $0 }) { throw BenchError.failed(message) }
    }
  }

  /// Waits (with the deadline) until `path` exists.
  static func waitFor(_ path: String) throws {
    let deadline = nowNanoseconds() + deadlineNanoseconds
    while !FileManager.default.fileExists(atPath: path) {
      guard nowNanoseconds() < deadline else { throw BenchError.failed("no \(path)") }
      usleep(1_000)
    }
  }
}

/// A temporary directory of one test, removed with it.
final class BenchDirectory {
  let path: String

  init() throws {
    path =
      FileManager.default.temporaryDirectory.appendingPathComponent(
        "bench-test-\(UUID().uuidString)"
      ).path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}
