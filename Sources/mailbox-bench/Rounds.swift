/// Alternating rounds: baseline and library take turns (the order flips every round), so a
/// machine that slows down during the run slows both alike.
enum Rounds {
  /// Runs `count` rounds and returns the medians of (baseline, library) samples.
  static func alternate(
    _ count: Int, baseline: () throws -> Double, library: () throws -> Double
  ) throws -> (baseline: Double, library: Double) {
    var baselineSamples: [Double] = []
    var librarySamples: [Double] = []
    try interleave(count) {
      baselineSamples.append(try baseline())
    } library: {
      librarySamples.append(try library())
    }
    return (Statistics.median(baselineSamples), Statistics.median(librarySamples))
  }

  /// Runs `count` rounds of both sides, the baseline first in even rounds and the library (or
  /// the peer standing in for it) first in odd ones; stops early once `proceed` says no.
  static func interleave(
    _ count: Int, while proceed: () -> Bool = { true }, baseline: () throws -> Void,
    library: () throws -> Void
  ) throws {
    for round in 0..<count where proceed() {
      if round % 2 == 0 {
        try baseline()
        try library()
      } else {
        try library()
        try baseline()
      }
    }
  }

  /// Messages per second for `count` messages in `nanoseconds`.
  static func rate(_ count: Int, _ nanoseconds: Int64) -> Double {
    Double(count) / (Double(max(nanoseconds, 1)) / 1e9)
  }

  /// Microseconds per operation for `count` operations in `nanoseconds`.
  static func cost(_ count: Int, _ nanoseconds: Int64) -> Double {
    Double(nanoseconds) / 1e3 / Double(max(count, 1))
  }
}
