import Foundation

/// When a delayed enqueue's message becomes claimable, as the public faces of the typed and the
/// untyped mailbox take it: from a date (parameter `notBefore`) or a number of seconds after now
/// (parameter `delay`). One conversion to the microseconds a name holds, with the checks of
/// ``TimeValue`` (a date outside the representable range or NaN refused, a delay clamped to the
/// last representable instant, NaN refused), each error naming the parameter.
enum DueTime {
  /// Claimable from this date (parameter `notBefore`).
  case notBefore(Date)
  /// Claimable this many seconds after now (parameter `delay`).
  case delay(TimeInterval)

  /// The due time in microseconds since the epoch; `now` (the mailbox clock's, in
  /// microseconds) is read only for a delay.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `notBefore` or `delay`.
  func micros(now: @autoclosure () -> Int64) throws -> Int64 {
    switch self {
    case .notBefore(let date): try TimeValue.micros(date, parameter: "notBefore")
    case .delay(let seconds): try TimeValue.due(after: seconds, from: now(), parameter: "delay")
    }
  }
}
