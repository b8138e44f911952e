public import Foundation

/// Checks and conversions for every time-valued public parameter, so that no value (NaN,
/// infinite, huge, before 1970) traps, wraps around or is moved silently:
///
/// - A date the name format must hold (`enqueuedAt`, `notBefore`) outside
///   ``AppGroupRawMailbox/representableDates`` (1970-01-01T00:00:00Z to
///   2286-11-20T17:46:39.999999Z, whole microseconds since the epoch in 16 digits), or NaN, is
///   refused with ``AppGroupMailboxError/invalidLimit(_:)`` naming the parameter and the range.
/// - A delay (`delay`, `retryAfter`) that is NaN is refused the same way; 0 or less means none;
///   a delay reaching past the last representable instant (up to +infinity) is clamped to it, so
///   an infinite delay never becomes "now" (the message then expires by its lifetime).
/// - A timeout (`wait(timeout:)`) that is NaN is refused; 0 or less only takes a wake-up already
///   there; +infinity waits without limit.
/// - Durations in ``AppGroupMailboxLimits`` are checked by ``AppGroupMailboxLimits/validate()``
///   (finite, greater than 0); a huge one saturates: a lease or a lifetime that reaches past the
///   last representable instant ends there.
enum TimeValue {
  /// The last instant a name can hold, in microseconds since the epoch.
  static let latestMicros = MessageKey.maxMicros

  /// The accepted range as text, for error messages.
  static let rangeText = "1970-01-01T00:00:00Z to 2286-11-20T17:46:39.999999Z"

  /// The error for `parameter`, naming its accepted range.
  static func invalid(_ parameter: String, _ range: String) -> AppGroupMailboxError {
    .invalidLimit("\(parameter) (accepted: \(range))")
  }

  /// `date` in whole microseconds since the epoch (truncated), or
  /// ``AppGroupMailboxError/invalidLimit(_:)`` when it lies outside the representable range.
  static func micros(_ date: Date, parameter: String) throws -> Int64 {
    guard !date.timeIntervalSince1970.isNaN, AppGroupRawMailbox.representableDates.contains(date)
    else {
      throw invalid(parameter, rangeText)
    }
    return min(max(0, date.timeIntervalSince1970.microseconds), latestMicros)
  }

  /// The due time `seconds` after `now` (microseconds), saturating at the last representable
  /// instant; NaN refused.
  static func due(after seconds: TimeInterval, from now: Int64, parameter: String) throws
    -> Int64
  {
    guard !seconds.isNaN else { throw invalid(parameter, "a number of seconds, not NaN") }
    return min(now.addingMicros(seconds.microseconds), latestMicros)
  }

  /// A timeout as the waiting code takes it: nil (no limit) for nil or +infinity, 0 for 0 or
  /// less; NaN refused (`optional` false: the parameter cannot be nil, and the error says so).
  static func timeout(
    _ seconds: TimeInterval?, parameter: String = "timeout", optional: Bool = true
  ) throws -> TimeInterval? {
    guard let seconds else { return nil }
    guard !seconds.isNaN else {
      let unlimited = optional ? "nil or infinity waits" : "infinity waits"
      throw invalid(parameter, "a number of seconds, not NaN; \(unlimited) without limit")
    }
    if seconds == .infinity { return nil }
    return max(0, seconds)
  }
}

extension AppGroupRawMailbox {
  /// The dates a message's `enqueuedAt` and not-before time can take: whole microseconds from
  /// 1970-01-01T00:00:00Z to 2286-11-20T17:46:39.999999Z (16 decimal digits in the file names,
  /// docs/FORMAT.md). Dates outside are refused with ``AppGroupMailboxError/invalidLimit(_:)``.
  public static let representableDates: ClosedRange<Date> =
    Date(timeIntervalSince1970: 0)...Date(timeIntervalSince1970: 9_999_999_999.999_999)
}
