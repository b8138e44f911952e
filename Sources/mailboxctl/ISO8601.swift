import Foundation
import Glibc

/// ISO 8601 dates as `mailboxctl` prints and reads them (RFC 3339 profile).
enum ISO8601 {
  /// `YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC, to the microsecond. A date past what a signed 64-bit
  /// count of microseconds holds (a hand-made header's `enqueuedAt` of 2^63 - 1 reads as one,
  /// once a double) is printed as the last (or first) such microsecond, not a trap; the
  /// arithmetic cannot overflow at either end.
  static func format(_ date: Date) -> String {
    let value = (date.timeIntervalSince1970 * 1_000_000).rounded(.down)
    let micros = Int64(exactly: value) ?? (value > 0 ? Int64.max : value < 0 ? Int64.min : 0)
    // Floor division: a date before 1970 has a negative second and a positive fraction.
    var seconds = time_t(micros / 1_000_000)
    var fraction = micros % 1_000_000
    if fraction < 0 {
      seconds -= 1
      fraction += 1_000_000
    }
    var parts = tm()
    gmtime_r(&seconds, &parts)
    return String(
      format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", Int(parts.tm_year) + 1900,
      Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min),
      Int(parts.tm_sec), Int(fraction))
  }

  /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM|+HHMM)` (`t`, `z` and a space for
  /// `T` accepted); nil for anything else, including out-of-range fields.
  static func parse(_ text: String) -> Date? {
    let bytes = Array(text.utf8)
    var index = 0
    func number(_ width: Int) -> Int? {
      guard index + width <= bytes.count else { return nil }
      var value = 0
      for byte in bytes[index..<(index + width)] {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      index += width
      return value
    }
    func expect(_ allowed: String) -> Bool {
      guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
      index += 1
      return true
    }
    guard let year = number(4), expect("-"), let month = number(2), expect("-"),
      let day = number(2), expect("Tt "), let hour = number(2), expect(":"),
      let minute = number(2), expect(":"), let second = number(2)
    else { return nil }
    guard (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59,
      second <= 60
    else { return nil }
    var fraction = 0.0
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: ",") {
      index += 1
      var scale = 0.1
      let start = index
      while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
        fraction += Double(bytes[index] - UInt8(ascii: "0")) * scale
        scale /= 10
        index += 1
      }
      guard index > start else { return nil }
    }
    var offset = 0
    if expect("Zz") {
      offset = 0
    } else if index < bytes.count,
      bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
    {
      let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
      index += 1
      guard let hours = number(2) else { return nil }
      _ = expect(":")
      guard let minutes = number(2), hours <= 23, minutes <= 59 else { return nil }
      offset = sign * (hours * 3600 + minutes * 60)
    } else {
      return nil
    }
    guard index == bytes.count else { return nil }
    var parts = tm()
    parts.tm_year = Int32(year - 1900)
    parts.tm_mon = Int32(month - 1)
    parts.tm_mday = Int32(day)
    parts.tm_hour = Int32(hour)
    parts.tm_min = Int32(minute)
    parts.tm_sec = Int32(second)
    let check = parts
    let seconds = timegm(&parts)
    guard parts.tm_mday == check.tm_mday, parts.tm_mon == check.tm_mon else { return nil }
    // Round the fraction to whole microseconds, the mailbox's precision.
    let micros = (fraction * 1_000_000).rounded()
    return Date(timeIntervalSince1970: Double(Int(seconds) - offset) + micros / 1_000_000)
  }
}
