import CMailboxBaseline
import Foundation

/// Wake-up latency between two processes: a producer stamps the monotonic clock into a message
/// and enqueues it (relaxed durability, one message every 2 ms); the consumer, blocked waiting,
/// wakes, claims and reads it and records now minus the stamp. p50 and p99 over the samples.
struct WakeMeasure: MeasureGroup {
  let context: BenchContext

  static let gapMicroseconds = 2_000

  func run() throws {
    let samples = options.quick ? 200 : 1_000
    var cRuns: [[Double]] = []
    var libraryRuns: [[Double]] = []
    for _ in 0..<options.roundCount {
      cRuns.append(try baselineRun(samples: samples))
      libraryRuns.append(
        try LibraryWake.run(
          workspace: workspace, samples: samples, gapMicroseconds: Self.gapMicroseconds))
    }
    for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
      report.add(
        Measurement(
          group: "wake", name: "enqueue -> wake in other process \(label)", durability: "relaxed",
          size: 0, unit: "us",
          library: Statistics.median(libraryRuns.map { Statistics.percentile($0, p) }),
          baseline: Statistics.median(cRuns.map { Statistics.percentile($0, p) }),
          against: "C inotify", note: "library watcher; \(samples) samples/run",
          rounds: options.roundCount))
    }
  }

  /// The C inotify loop: one consumer child, this process producing. Latencies in µs.
  private func baselineRun(samples: Int) throws -> [Double] {
    let path = workspace.fresh("c-wake")
    defer { workspace.remove(path) }
    let side = try BaselineSide(root: path, durable: false)
    let out = path + "/latencies"
    let pid = try Children.spawn(["_wake-c", path, String(samples), out])
    let deadline = nowNanoseconds() + 30_000_000_000
    while !FileManager.default.fileExists(atPath: path + "/ready") {
      guard nowNanoseconds() < deadline else { throw BenchError.failed("C wake consumer") }
      usleep(1_000)
    }
    guard cbaseline_wake_produce(side.spool, samples, Self.gapMicroseconds) == 0 else {
      throw BenchError.failed("C wake producer")
    }
    guard try Children.wait(pid).status == 0 else { throw BenchError.failed("C wake consumer") }
    return try Children.result(out).compactMap { Double($0).map { $0 / 1e3 } }
  }
}
