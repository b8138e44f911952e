import AppGroupMailbox

/// Enqueue, claim+read+acknowledge and the full cycle, in messages per second, at both
/// durabilities and both sizes, and for 64 KiB the untyped (raw) claim+read+acknowledge; every
/// run in a fresh directory.
struct ThroughputMeasures: MeasureGroup {
  let context: BenchContext

  static let sizes = [256, 65_536]

  /// Messages per run.
  func count(durable: Bool, size: Int) -> Int {
    switch (durable, size > 1024) {
    case (true, false): options.quick ? 24 : 300
    case (true, true): options.quick ? 10 : 120
    case (false, false): options.quick ? 300 : 3_000
    case (false, true): options.quick ? 60 : 800
    }
  }

  func run() throws {
    for size in Self.sizes {
      for durable in [true, false] {
        let count = count(durable: durable, size: size)
        let label = durable ? "full" : "relaxed"
        let enqueue = try measureBoth(durable: durable) {
          try $0.timeEnqueue(count: count, size: size)
        }
        add("enqueue", label, size, count, enqueue)
        let consume = try measure(durable: durable) { path in
          let side = try BaselineSide(root: path, durable: durable)
          try side.prefill(count: count, size: size, durable: durable)
          return try side.timeConsume(count: count)
        } library: { path in
          _ = try LibrarySide(container: path, durability: .relaxed)
            .timeEnqueue(count: count, size: size)
          return try LibrarySide(container: path, durability: durable ? .full : .relaxed)
            .timeConsume(count: count)
        }
        add("claim+read+ack", label, size, count, consume)
        if size > 1024 {
          let raw = try measure(durable: durable) { path in
            let side = try BaselineSide(root: path, durable: durable)
            try side.prefill(count: count, size: size, durable: durable)
            return try side.timeConsume(count: count)
          } library: { path in
            _ = try LibrarySide(container: path, durability: .relaxed)
              .timeEnqueue(count: count, size: size)
            return try RawSide(container: path, durability: durable ? .full : .relaxed)
              .timeConsume(count: count)
          }
          add("claim+read+ack, raw", label, size, count, raw)
        }
        let cycle = try measureBoth(durable: durable) { try $0.timeCycle(count: count, size: size) }
        add("full cycle", label, size, count, cycle)
      }
    }
  }

  /// ``measure(durable:baseline:library:)`` with the same operation on each side, opened at
  /// `durable`.
  private func measureBoth(durable: Bool, _ operation: (any TimedSide) throws -> Int64) throws
    -> Paired
  {
    try measure(durable: durable) { path in
      try operation(BaselineSide(root: path, durable: durable))
    } library: { path in
      try operation(LibrarySide(container: path, durability: durable ? .full : .relaxed))
    }
  }

  /// Runs alternating rounds, each side in a fresh directory; returns each round's nanoseconds.
  private func measure(
    durable: Bool, baseline: (String) throws -> Int64, library: (String) throws -> Int64
  ) throws -> Paired {
    try Rounds.alternate(options.roundCount) {
      let path = workspace.fresh(durable ? "c-full" : "c-relaxed")
      defer { workspace.remove(path) }
      return Double(try baseline(path))
    } library: {
      let path = workspace.fresh(durable ? "lib-full" : "lib-relaxed")
      defer { workspace.remove(path) }
      return Double(try library(path))
    }
  }

  private func add(
    _ name: String, _ durability: String, _ size: Int, _ count: Int,
    _ nanoseconds: Paired
  ) {
    let rates = nanoseconds.map { Rounds.rate(count, Int64($0)) }
    report.add(
      Measurement(
        group: "throughput", name: name, durability: durability, size: size, unit: "msg/s",
        library: Statistics.median(rates.library), baseline: Statistics.median(rates.baseline),
        note: "\(count) msgs/run", rounds: rates.library.count, libraryRounds: rates.library,
        baselineRounds: rates.baseline))
  }
}
