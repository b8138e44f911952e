import AppGroupMailbox

/// Enqueue, claim+read+acknowledge and the full cycle, in messages per second, at both
/// durabilities and both sizes, and for 64 KiB the untyped (raw) claim+read+acknowledge; every
/// run in a fresh directory.
struct ThroughputMeasures: MeasureGroup {
  let context: BenchContext

  static let sizes = [256, 65_536]

  /// Messages per run of claim+read+acknowledge: as many as a relaxed run at both durabilities
  /// (the messages are prefilled untimed; at full durability a claim's flush costs either
  /// tenths or whole milliseconds, and a few dozen messages a round did not average that out).
  /// With `--quick`, 300 of 64 KiB: C consumed 60 in about 1.5 ms, so one preemption on a
  /// busy machine (milliseconds) tripled a round.
  func consumeCount(size: Int) -> Int {
    options.quick && size > 1024 ? 300 : count(durable: false, size: size)
  }

  /// Messages per run of enqueue and the full cycle.
  func count(durable: Bool, size: Int) -> Int {
    switch (durable, size > 1024) {
    case (true, false): options.quick ? 24 : 300
    case (true, true): options.quick ? 10 : 120
    case (false, false): options.quick ? 500 : 3_000
    case (false, true): options.quick ? 60 : 800
    }
  }

  func run() throws {
    for size in Self.sizes {
      for durable in [true, false] {
        let count = count(durable: durable, size: size)
        let label = durable ? "full" : "relaxed"
        let enqueue = try measureBoth(durable: durable, count: count) { side in
          { try side.timeEnqueue(count: $0, size: size) }
        }
        add("enqueue", label, size, count, enqueue)
        try consume(durable: durable, size: size, count: consumeCount(size: size))
        let cycle = try measureBoth(durable: durable, count: count) { side in
          { try side.timeCycle(count: $0, size: size) }
        }
        add("full cycle", label, size, count, cycle)
      }
    }
  }

  /// Claim+read+acknowledge of `count` messages, and for 64 KiB the raw path too. Each turn
  /// first enqueues (relaxed, untimed) the messages it then consumes, so they are as fresh on
  /// both sides: prefilling the whole round first left a window in which a `sync` by another
  /// process wrote one side's files back, and unlinking a file on disk waits for a discard.
  private func consume(durable: Bool, size: Int, count: Int) throws {
    let label = durable ? "full" : "relaxed"
    let durability = durable ? AppGroupMailbox<String>.Durability.full : .relaxed
    func baseline(_ path: String) throws -> (Int) throws -> Int64 {
      let side = try BaselineSide(root: path, durable: durable)
      return { n in
        try side.prefill(count: n, size: size, durable: durable)
        return try side.timeConsume(count: n)
      }
    }
    func library(raw: Bool) -> (String) throws -> (Int) throws -> Int64 {
      { path in
        let filler = try LibrarySide(container: path, durability: .relaxed)
        let consume =
          raw
          ? try RawSide(container: path, durability: durability).timeConsume(count:)
          : try LibrarySide(container: path, durability: durability).timeConsume(count:)
        return { n in
          _ = try filler.timeEnqueue(count: n, size: size)
          return try consume(n)
        }
      }
    }
    for raw in size > 1024 ? [false, true] : [false] {
      let paired = try measure(
        durable: durable, count: count, baseline: baseline, library: library(raw: raw))
      add(raw ? "claim+read+ack, raw" : "claim+read+ack", label, size, count, paired)
    }
  }

  /// Operations a round is split into: the sides take turns every `count / chunks` operations.
  static let chunks = 10

  /// ``measure(durable:count:baseline:library:)`` with the same operation on each side,
  /// opened at `durable`.
  private func measureBoth(
    durable: Bool, count: Int, _ operation: @escaping (any TimedSide) -> (Int) throws -> Int64
  ) throws -> Paired {
    try measure(durable: durable, count: count) { path in
      operation(try BaselineSide(root: path, durable: durable))
    } library: { path in
      operation(try LibrarySide(container: path, durability: durable ? .full : .relaxed))
    }
  }

  /// Runs the rounds; returns each round's nanoseconds per side. In each round both sides are
  /// set up in fresh directories (`baseline` and `library` return a function that runs `n`
  /// operations and returns their nanoseconds), then take turns, ``chunks`` times, each running
  /// its share of the `count` operations, the side going first flipping every turn and every
  /// round: a change of load on the machine lasting longer than a turn (milliseconds) slows
  /// both sides alike, which whole rounds back to back (tenths of a second each) did not.
  private func measure(
    durable: Bool, count: Int, baseline: (String) throws -> (Int) throws -> Int64,
    library: (String) throws -> (Int) throws -> Int64
  ) throws -> Paired {
    let turns = min(Self.chunks, count)
    var paired = Paired()
    for round in 0..<options.roundCount {
      let cPath = workspace.fresh(durable ? "c-full" : "c-relaxed")
      let libPath = workspace.fresh(durable ? "lib-full" : "lib-relaxed")
      defer {
        workspace.remove(cPath)
        workspace.remove(libPath)
      }
      let c = try baseline(cPath)
      let lib = try library(libPath)
      var (cTime, libTime): (Int64, Int64) = (0, 0)
      for turn in 0..<turns {
        let n = count * (turn + 1) / turns - count * turn / turns
        if (round + turn) % 2 == 0 {
          cTime += try c(n)
          libTime += try lib(n)
        } else {
          libTime += try lib(n)
          cTime += try c(n)
        }
      }
      paired.baseline.append(Double(cTime))
      paired.library.append(Double(libTime))
    }
    return paired
  }

  private func add(
    _ name: String, _ durability: String, _ size: Int, _ count: Int,
    _ nanoseconds: Paired
  ) {
    let rates = nanoseconds.map { Rounds.rate(count, Int64($0)) }
    report.add(
      .rates(
        rates, group: "throughput", name: name, durable: durability == "full", size: size,
        note: "\(count) msgs/run"))
  }
}
