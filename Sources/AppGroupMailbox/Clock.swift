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
  /// Seconds as whole microseconds, saturating.
  var microseconds: Int64 {
    let value = self * 1_000_000
    if value >= Double(Int64.max) { return Int64.max }
    if value <= Double(Int64.min) { return Int64.min }
    return Int64(value)
  }
}
