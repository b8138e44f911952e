import CMailboxBaseline
import Foundation

/// Wake-up latency between two processes: a producer stamps the monotonic clock into a message
/// and enqueues it (relaxed durability, one message every 2 ms); the consumer, blocked waiting,
/// wakes, claims and reads it and records now minus the stamp. p50 and p99 per run; the rows
/// give the median over runs, and the C inotify loop and the library take turns going first.
/// A stamp that cannot be parsed is dropped on either side (and counted in the note).
struct WakeMeasure: MeasureGroup {
  let context: BenchContext

  static let gapMicroseconds = 2_000

  func run() throws {
    let samples = options.quick ? 150 : 1_000
    var cRuns: [[Double]] = []
    var libraryRuns: [[Double]] = []
    try Rounds.interleave(options.roundCount) {
      cRuns.append(try baselineRun(samples: samples))
    } library: {
      libraryRuns.append(
        try LibraryWake.run(
          workspace: workspace, samples: samples, gapMicroseconds: Self.gapMicroseconds))
    }
    let dropped = (cRuns + libraryRuns).reduce(0) { $0 + samples - $1.count }
    let note =
      "library watcher; \(samples) samples/run"
      + (dropped > 0 ? "; \(dropped) unparseable stamps dropped" : "")
    for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
      let library = libraryRuns.map { Statistics.percentile($0, p) }
      let baseline = cRuns.map { Statistics.percentile($0, p) }
      report.add(
        Measurement(
          group: "wake", name: "enqueue -> wake in other process \(label)", durability: "relaxed",
          size: 0, unit: "us", library: Statistics.median(library),
          baseline: Statistics.median(baseline), against: "C inotify", note: note,
          rounds: library.count, libraryRounds: library, baselineRounds: baseline))
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
