import Glibc

/// The counters in a namespace's `state` file, guarded by an exclusive flock(2) on that file.
///
/// The file holds one line of fixed width: `1 <sequence:20> <depth:20> <newest:20>\n` (format,
/// last insertion sequence handed out, messages pending plus claimed plus delayed, newest
/// implicit `enqueuedAt` in microseconds). It is a cache of what the names say: a missing, torn or
/// unparsable line, or one a power loss rolled back, is rebuilt from the listing (see
/// ``Spool/recount(stored:)``), so the file is never flushed.
struct SpoolCounters: Equatable, Sendable {
  var sequence: UInt64
  var depth: Int
  var newestImplicitMicros: Int64

  static let lineLength = 65

  /// The largest sequence an enqueue hands out, a recount takes from a name and a `state` line
  /// holds: 2^63 - 1. A name with a larger one (20 digits hold up to 2^64 - 1) is still a
  /// message but does not move the counter, and a line with one is damaged (rebuilt). When the
  /// counter leaves no room, an enqueue rebuilds it from the names alone
  /// (``Spool/makeSequenceRoom(_:in:)``): a hand-written line then costs one rebuild, and a
  /// planted name at the ceiling stops enqueues only until its message leaves the mailbox.
  static let sequenceCeiling = UInt64(Int64.max)

  var line: [UInt8] {
    var bytes: [UInt8] = [UInt8(ascii: "1"), UInt8(ascii: " ")]
    bytes.reserveCapacity(Self.lineLength)
    NameBytes.decimal(sequence, width: 20, into: &bytes)
    bytes.append(UInt8(ascii: " "))
    NameBytes.decimal(UInt64(max(0, depth)), width: 20, into: &bytes)
    bytes.append(UInt8(ascii: " "))
    NameBytes.decimal(UInt64(max(0, newestImplicitMicros)), width: 20, into: &bytes)
    bytes.append(UInt8(ascii: "\n"))
    return bytes
  }

  init(sequence: UInt64, depth: Int, newestImplicitMicros: Int64) {
    self.sequence = sequence
    self.depth = depth
    self.newestImplicitMicros = newestImplicitMicros
  }

  init?(line bytes: [UInt8]) {
    guard bytes.count == Self.lineLength, bytes[0] == UInt8(ascii: "1"),
      bytes[1] == UInt8(ascii: " "), bytes[22] == UInt8(ascii: " "),
      bytes[43] == UInt8(ascii: " "), bytes[64] == UInt8(ascii: "\n"),
      let sequence = PendingName.digits(bytes[2..<22]), sequence <= Self.sequenceCeiling,
      let depth = PendingName.digits(bytes[23..<43]), depth <= UInt64(Int32.max),
      let newest = PendingName.digits(bytes[44..<64]), newest <= UInt64(MessageKey.maxMicros)
    else { return nil }
    self.init(sequence: sequence, depth: Int(depth), newestImplicitMicros: Int64(newest))
  }
}
