import AppGroupMailbox

/// Cost per operation with many messages waiting: enqueue, claim+read+acknowledge and the full
/// cycle at depth 100, 10,000 and 100,000 (256-byte messages).
///
/// Each depth has one deep spool per side, prefilled once in relaxed mode and reused by every
/// round and every later run of the benchmark (see ``DeepSpools``; a round leaves the depth as
/// it found it: K enqueued, K consumed, K cycles). Each round
/// opens its side afresh and makes its first claim untimed (reported apart as "first claim":
/// the one listing a long-lived consumer makes), then times steady-state operations.
struct DepthMeasures {
  let options: BenchOptions
  let workspace: Workspace
  let report: Report

  static let depths = [100, 10_000, 100_000]
  static let size = 256

  /// Operations per round.
  func operations(durable: Bool) -> Int {
    durable ? (options.quick ? 20 : 80) : (options.quick ? 150 : 600)
  }

  /// Per-depth results kept for the target check (claim cost at 100,000 vs 100).
  private(set) var claimCost: [Int: Double] = [:]

  mutating func run() throws {
    for depth in Self.depths {
      let (cPath, libPath) = try DeepSpools.prepare(
        depth: depth, size: Self.size, cache: options.cacheDirectory)
      for durable in [true, false] {
        try measure(depth: depth, durable: durable, cPath: cPath, libPath: libPath)
      }
    }
  }

  private mutating func measure(depth: Int, durable: Bool, cPath: String, libPath: String)
    throws
  {
    let k = operations(durable: durable)
    let size = Self.size
    var c: [[Double]] = [[], [], [], []]
    var lib: [[Double]] = [[], [], [], []]
    for round in 0..<options.roundCount {
      func baseline() throws {
        let side = try BaselineSide(root: cPath, durable: durable)
        let start = nowNanoseconds()
        try side.refresh()
        _ = try side.timeConsume(count: 1)
        c[3].append(Double(nowNanoseconds() - start) / 1e3)
        _ = try side.timeEnqueue(count: 1, size: size)
        c[0].append(Rounds.cost(k, try side.timeEnqueue(count: k, size: size)))
        c[1].append(Rounds.cost(k, try side.timeConsume(count: k)))
        c[2].append(Rounds.cost(k, try side.timeCycle(count: k, size: size)))
      }
      func library() throws {
        let side = try LibrarySide(container: libPath, durability: durable ? .full : .relaxed)
        let start = nowNanoseconds()
        _ = try side.timeConsume(count: 1)
        lib[3].append(Double(nowNanoseconds() - start) / 1e3)
        _ = try side.timeEnqueue(count: 1, size: size)
        lib[0].append(Rounds.cost(k, try side.timeEnqueue(count: k, size: size)))
        lib[1].append(Rounds.cost(k, try side.timeConsume(count: k)))
        lib[2].append(Rounds.cost(k, try side.timeCycle(count: k, size: size)))
      }
      if round % 2 == 0 {
        try baseline()
        try library()
      } else {
        try library()
        try baseline()
      }
    }
    let names = ["enqueue", "claim+read+ack", "full cycle", "first claim (one listing)"]
    let label = durable ? "full" : "relaxed"
    for index in 0..<4 {
      let libraryValue = Statistics.median(lib[index])
      if index == 1, !durable { claimCost[depth] = libraryValue }
      report.add(
        Measurement(
          group: "depth", name: "\(names[index]) @\(depth)", durability: label, size: size,
          unit: index == 3 ? "us" : "us/op", library: libraryValue,
          baseline: Statistics.median(c[index]),
          note: index == 3 ? "once per consumer" : "\(k) ops/run, prefilled spool reused",
          rounds: options.roundCount))
    }
  }
}
