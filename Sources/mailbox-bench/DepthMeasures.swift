import AppGroupMailbox

/// Cost per operation with many messages waiting: enqueue, claim+read+acknowledge and the full
/// cycle at depth 100, 10,000 and 100,000 (256-byte messages).
///
/// Each depth has one deep spool per side, prefilled once in relaxed mode and reused by every
/// round and every later run of the benchmark (see ``DeepSpools``; a round leaves the depth as
/// it found it: K enqueued, K consumed, K cycles). Each round
/// opens its side afresh and makes its first claim untimed (reported apart as "first claim":
/// the one listing a long-lived consumer makes), then times steady-state operations.
struct DepthMeasures: MeasureGroup {
  let context: BenchContext

  static let depths = [100, 10_000, 100_000]
  static let size = 256

  /// Operations per round.
  func operations(durable: Bool) -> Int {
    durable ? (options.quick ? 20 : 80) : (options.quick ? 150 : 600)
  }

  /// Per-depth results kept for the target check (claim cost at 100,000 vs 100).
  private(set) var claimCost: [Int: Double] = [:]

  /// One round on one side, in microseconds per operation: enqueue, claim+read+ack and the
  /// full cycle over `k` operations each, and last the first claim, timed from `start`.
  private static func sample(_ side: some TimedSide, since start: Int64, k: Int, size: Int)
    throws -> [Double]
  {
    _ = try side.timeConsume(count: 1)
    let firstClaim = Double(nowNanoseconds() - start) / 1e3
    _ = try side.timeEnqueue(count: 1, size: size)
    let enqueue = Rounds.cost(k, try side.timeEnqueue(count: k, size: size))
    let consume = Rounds.cost(k, try side.timeConsume(count: k))
    let cycle = Rounds.cost(k, try side.timeCycle(count: k, size: size))
    return [enqueue, consume, cycle, firstClaim]
  }

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
    try Rounds.interleave(options.roundCount) {
      let side = try BaselineSide(root: cPath, durable: durable)
      let start = nowNanoseconds()
      try side.refresh()
      let samples = try Self.sample(side, since: start, k: k, size: size)
      for (index, value) in samples.enumerated() { c[index].append(value) }
    } library: {
      let side = try LibrarySide(container: libPath, durability: durable ? .full : .relaxed)
      let samples = try Self.sample(side, since: nowNanoseconds(), k: k, size: size)
      for (index, value) in samples.enumerated() { lib[index].append(value) }
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
          rounds: options.roundCount, libraryRounds: lib[index], baselineRounds: c[index]))
    }
  }
}
