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
    return bytes.withContiguousStorageIfAvailable { parseUUID($0, lowercaseOnly: false) }
      ?? Array(bytes).withUnsafeBufferPointer { parseUUID($0, lowercaseOnly: false) }
  }

  /// ``parseUUID(_:)`` over a buffer; with `lowercaseOnly`, upper-case digits do not parse
  /// (a file name's canonical form). A first claim at depth parses one per pending name.
  static func parseUUID(_ bytes: UnsafeBufferPointer<UInt8>, lowercaseOnly: Bool) -> UUID? {
    guard bytes.count == 36, bytes[8] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: "-"),
      bytes[18] == UInt8(ascii: "-"), bytes[23] == UInt8(ascii: "-")
    else { return nil }
    var high: UInt64 = 0
    var low: UInt64 = 0
    var seen: UInt64 = 0  // every nibble ORed: 16 marks a byte that is not a digit
    let letters: UInt8 = lowercaseOnly ? 0 : 0x20
    @inline(__always) func add(_ range: Range<Int>, to word: inout UInt64) {
      for index in range {
        let byte = bytes[index]
        let digit = byte &- UInt8(ascii: "0")
        let letter = (byte | letters) &- UInt8(ascii: "a")
        let nibble: UInt64 = digit < 10 ? UInt64(digit) : letter < 6 ? UInt64(letter) + 10 : 16
        seen |= nibble
        word = word << 4 | (nibble & 0xf)
      }
    }
    add(0..<8, to: &high)
    add(9..<13, to: &high)
    add(14..<18, to: &high)
    add(19..<23, to: &low)
    add(24..<36, to: &low)
    guard seen & 16 == 0 else { return nil }
    // Two big-endian words are the 16 bytes of the UUID in order.
    return UUID(uuid: unsafeBitCast((high.bigEndian, low.bigEndian), to: uuid_t.self))
  }
}
