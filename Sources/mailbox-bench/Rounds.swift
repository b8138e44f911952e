/// Alternating rounds: baseline and library take turns (the order flips every round), so a
/// machine that slows down during the run slows both alike.
enum Rounds {
  /// Runs `count` rounds and returns the medians of (baseline, library) samples.
  static func alternate(
    _ count: Int, baseline: () throws -> Double, library: () throws -> Double
  ) throws -> (baseline: Double, library: Double) {
    var baselineSamples: [Double] = []
    var librarySamples: [Double] = []
    for round in 0..<count {
      if round % 2 == 0 {
        baselineSamples.append(try baseline())
        librarySamples.append(try library())
      } else {
        librarySamples.append(try library())
        baselineSamples.append(try baseline())
      }
    }
    return (Statistics.median(baselineSamples), Statistics.median(librarySamples))
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
