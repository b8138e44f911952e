import Glibc

/// Where the mailbox reads the time: microseconds since the Unix epoch. Tests inject a fake one.
struct MailboxClock: Sendable {
  var nowMicros: @Sendable () -> Int64

  /// The system's real-time clock (clock_gettime(2), `CLOCK_REALTIME`).
  static let system = MailboxClock {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
  }
}

extension Double {
  /// Seconds as whole microseconds, saturating at the bounds of `Int64`; NaN gives 0 (public
  /// entry points refuse NaN before converting, see ``TimeValue``).
  var microseconds: Int64 {
    if isNaN { return 0 }
    let value = self * 1_000_000
    if value >= Double(Int64.max) { return Int64.max }
    if value <= Double(Int64.min) { return Int64.min }
    return Int64(value)
  }
}

extension Int64 {
  /// `self` plus `micros`, saturating at the bounds of `Int64` instead of trapping or wrapping
  /// around (an infinite delay stays in the far future, never becomes "now").
  func addingMicros(_ micros: Int64) -> Int64 {
    let (sum, overflow) = addingReportingOverflow(micros)
    return overflow ? (micros > 0 ? .max : .min) : sum
  }
}

extension Int64 {
  /// Microseconds from `earlier` to `self`, saturating instead of trapping (a hostile header's
  /// `enqueuedAt` may be any 64-bit integer).
  func microsSince(_ earlier: Int64) -> Int64 {
    let (difference, overflow) = subtractingReportingOverflow(earlier)
    return overflow ? (earlier < 0 ? .max : .min) : difference
  }
}
