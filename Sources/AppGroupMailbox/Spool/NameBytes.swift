import Foundation

/// Builds file names byte by byte: zero-padded decimal and hexadecimal fields and lower-case
/// UUIDs, without the intermediate strings of `String(value)`, `String(repeating:count:)` and
/// `uuidString.lowercased()` (a claim formats two names; this is on the hot path).
enum NameBytes {
  /// Appends `value` in decimal, zero-padded to at least `width` digits.
  static func decimal(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    // The digits are built right to left in 24 bytes on the stack (a UInt64 has at most 20),
    // then appended at once.
    let zeros: UInt64 = 0x3030_3030_3030_3030
    var buffer = (zeros, zeros, zeros)
    if width > 24 { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - 24)) }
    withUnsafeMutableBytes(of: &buffer) { raw in
      var remaining = value
      var index = raw.count
      repeat {
        index -= 1
        raw[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
        remaining /= 10
      } while remaining > 0
      let start = min(index, raw.count - min(max(width, 0), raw.count))
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[start...]))
    }
  }

  /// Appends `value` in lower-case hexadecimal, zero-padded to `width` digits (at most 16).
  static func hex(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    var buffer: (UInt64, UInt64) = (0, 0)
    withUnsafeMutableBytes(of: &buffer) { raw in
      let count = max(0, min(width, 16))
      for index in 0..<count {
        let shift = UInt64((count - 1 - index) * 4)
        raw[index] = hexDigit(UInt8(truncatingIfNeeded: value >> shift) & 0xf)
      }
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[..<count]))
    }
  }

  /// Parses exactly `width` (at most 16) lower-case hexadecimal digits, as ``hex(_:width:into:)``
  /// writes them; nil for anything else (a sign, which `UInt64(_:radix:)` takes, upper case,
  /// another length).
  static func parseHex(_ bytes: some Collection<UInt8>, width: Int) -> UInt64? {
    guard bytes.count == width, width <= 16 else { return nil }
    var value: UInt64 = 0
    for byte in bytes {
      let digit = byte &- UInt8(ascii: "0")
      let letter = byte &- UInt8(ascii: "a")
      guard digit < 10 || letter < 6 else { return nil }
      value = value << 4 | UInt64(digit < 10 ? digit : letter + 10)
    }
    return value
  }

  /// `byte` with an ASCII capital letter made small; every other byte as it is.
  static func lowercased(_ byte: UInt8) -> UInt8 {
    byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
  }

  /// Appends `id` as 36 lower-case characters (8-4-4-4-12), as `uuidString.lowercased()`.
  static func uuid(_ id: UUID, into bytes: inout [UInt8]) {
    var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &text) { out in
      withUnsafeBytes(of: id.uuid) { raw in
        var at = 0
        for index in 0..<16 {
          if index == 4 || index == 6 || index == 8 || index == 10 {
            out[at] = UInt8(ascii: "-")
            at += 1
          }
          out[at] = hexDigit(raw[index] >> 4)
          out[at + 1] = hexDigit(raw[index] & 0xf)
          at += 2
        }
      }
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[..<36]))
    }
  }

  /// The lower-case hexadecimal digit of a nibble (0 to 15).
  @inline(__always)
  private static func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
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
