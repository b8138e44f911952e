import Foundation

/// `--count N` and `--timeout SECONDS` of a command that follows a mailbox until it is stopped
/// (`events`, `watch`): it ends after N lines, or SECONDS after it started.
struct FollowLimits {
  /// The lines after which the command ends (nil: no bound; at least 1).
  let count: Int?
  /// When the command ends (nil: no bound).
  let deadline: Date?

  /// The two options; `unit` names what `--count` counts ("events (lines)").
  static func options(counting unit: String) -> [OptionSpec] {
    [
      .value("--count", "N", "Exit after N \(unit)."),
      .value("--timeout", "SECONDS", "Exit after SECONDS."),
    ]
  }

  /// Reads both options; the deadline counts from now.
  /// - Throws: ``UsageError`` for a count below 1 or a timeout that is not a number
  ///   of seconds.
  init(_ arguments: ParsedArguments) throws(UsageError) {
    count = try arguments.integer("--count", in: 1...Int.max)
    deadline = try arguments.seconds("--timeout").map { Date().addingTimeInterval($0) }
  }

  /// Whether `lines` printed reach `--count`.
  func reached(_ lines: Int) -> Bool { count.map { lines >= $0 } ?? false }

  /// Seconds until the deadline (an hour without one: the caller waits again), nil once it has
  /// passed.
  var secondsLeft: TimeInterval? {
    let left = deadline.map { $0.timeIntervalSinceNow } ?? 3600
    return left > 0 ? left : nil
  }
}
