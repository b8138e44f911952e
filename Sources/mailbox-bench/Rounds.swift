/// Alternating rounds: baseline and library take turns (the order flips every round), so a
/// machine that slows down during the run slows both alike.
enum Rounds {
  /// Runs `count` rounds and returns every round's (baseline, library) samples, in round order.
  static func alternate(
    _ count: Int, baseline: () throws -> Double, library: () throws -> Double
  ) throws -> Paired {
    var paired = Paired()
    try interleave(count) {
      paired.baseline.append(try baseline())
    } library: {
      paired.library.append(try library())
    }
    return paired
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

/// The samples of both sides, one per round, in round order (round `i` of each side ran back to
/// back with the other's).
struct Paired {
  var baseline: [Double] = []
  var library: [Double] = []

  /// Both sides' samples converted (for example nanoseconds to messages per second).
  func map(_ transform: (Double) -> Double) -> Paired {
    Paired(baseline: baseline.map(transform), library: library.map(transform))
  }
}
