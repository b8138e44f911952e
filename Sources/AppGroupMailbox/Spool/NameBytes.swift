import Foundation

/// Builds file names byte by byte: zero-padded decimal and hexadecimal fields and lower-case
/// UUIDs, without the intermediate strings of `String(value)`, `String(repeating:count:)` and
/// `uuidString.lowercased()` (a claim formats two names; this is on the hot path).
enum NameBytes {
  private static let hexDigits = Array("0123456789abcdef".utf8)

  /// Appends `value` in decimal, zero-padded to at least `width` digits.
  static func decimal(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    var remaining = value
    var digits = 0
    repeat {
      digits += 1
      remaining /= 10
    } while remaining > 0
    for _ in 0..<max(digits, width) { bytes.append(UInt8(ascii: "0")) }
    remaining = value
    var index = bytes.count - 1
    repeat {
      bytes[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
      remaining /= 10
      index -= 1
    } while remaining > 0
  }

  /// Appends `value` in lower-case hexadecimal, zero-padded to `width` digits (at most 16).
  static func hex(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    for shift in stride(from: (width - 1) * 4, through: 0, by: -4) {
      bytes.append(hexDigits[Int((value >> UInt64(shift)) & 0xf)])
    }
  }

  /// Appends `id` as 36 lower-case characters (8-4-4-4-12), as `uuidString.lowercased()`.
  static func uuid(_ id: UUID, into bytes: inout [UInt8]) {
    withUnsafeBytes(of: id.uuid) { raw in
      for (index, byte) in raw.enumerated() {
        if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
        bytes.append(hexDigits[Int(byte >> 4)])
        bytes.append(hexDigits[Int(byte & 0xf)])
      }
    }
  }
}

extension NameBytes {
  /// Parses 36 bytes `8-4-4-4-12` hexadecimal digits (either case) into a UUID; nil for
  /// anything else. Stricter than `UUID(uuidString:)` (no sscanf leniency), and without its
  /// cost.
  static func parseUUID<C: Collection>(_ bytes: C) -> UUID? where C.Element == UInt8 {
    guard bytes.count == 36 else { return nil }
    return bytes.withContiguousStorageIfAvailable { parseUUID(buffer: $0) }
      ?? parseUUID(buffer: Array(bytes))
  }

  private static func parseUUID(buffer bytes: some RandomAccessCollection<UInt8>) -> UUID? {
    var high: UInt64 = 0
    var low: UInt64 = 0
    var nibbles = 0
    var index = 0
    for byte in bytes {
      defer { index += 1 }
      if index == 8 || index == 13 || index == 18 || index == 23 {
        guard byte == UInt8(ascii: "-") else { return nil }
        continue
      }
      let nibble: UInt64
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(byte - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(byte - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = UInt64(byte - UInt8(ascii: "A") + 10)
      default: return nil
      }
      if nibbles < 16 { high = high << 4 | nibble } else { low = low << 4 | nibble }
      nibbles += 1
    }
    // Two big-endian words are the 16 bytes of the UUID in order.
    return UUID(uuid: unsafeBitCast((high.bigEndian, low.bigEndian), to: uuid_t.self))
  }
}
