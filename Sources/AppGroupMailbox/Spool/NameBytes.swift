import Foundation

/// Builds file names byte by byte: zero-padded decimal and hexadecimal fields and lower-case
/// UUIDs, without the intermediate strings of `String(value)`, `String(repeating:count:)` and
/// `uuidString.lowercased()` (a claim formats two names; this is on the hot path).
enum NameBytes {
  /// Appends `value` in decimal, zero-padded to at least `width` digits.
  static func decimal(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    // Three words of 8 digits (``decimalDigits(_:)``) hold the 20 a UInt64 can have, 24 bytes
    // on the stack, "0"s where the value has no digits; the digits the value has, or `width`
    // of them, are appended at once.
    if width > 24 { bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - 24)) }
    let eight: UInt64 = 100_000_000
    let zeros: UInt64 = 0x3030_3030_3030_3030
    var text = (zeros, zeros, decimalDigits(value % eight).littleEndian)
    if value >= eight {
      text.1 = decimalDigits(value / eight % eight).littleEndian
      if value >= eight &* eight { text.0 = decimalDigits(value / eight / eight).littleEndian }
    }
    // The digit count: floor(log10(2^bits)) is t or t + 1 (t = bits * 1233 >> 12, 1233 / 4096
    // just above log10(2)); the one comparison with 10^t decides.
    let bits = UInt64.bitWidth - value.leadingZeroBitCount
    let t = (bits &* 1233) >> 12
    let digits = max(1, value >= powersOfTen[t] ? t + 1 : t)
    withUnsafeBytes(of: &text) { raw in
      bytes.append(
        contentsOf: UnsafeRawBufferPointer(rebasing: raw[(24 - max(digits, min(width, 24)))...]))
    }
  }

  /// 10^0 to 10^19, every power of ten a UInt64 holds.
  private static let powersOfTen: [UInt64] = (0..<20).map {
    (0..<$0).reduce(1) { value, _ in value * 10 }
  }

  /// The 8 decimal digits of `value` (0 to 99,999,999; zero-padded) as a little-endian word,
  /// the first digit in its lowest byte: halves of 4 digits, quarters of 2 and digits in lanes
  /// of one word, each division by 100 or 10 a multiplication and a shift that is exact in its
  /// range (x / 100 = x * 10,486 >> 20 for x < 10,000; x / 10 = x * 103 >> 10 for x < 100;
  /// Lemire, "Converting integers to decimal strings faster with AVX-512", 2022, the scalar
  /// part).
  @inline(__always)
  static func decimalDigits(_ value: UInt64) -> UInt64 {
    let halves = value / 10_000 | (value % 10_000) << 32  // the first 4 digits in the low lane
    let high = ((halves &* 10_486) >> 20) & 0x0000_007F_0000_007F
    let quarters = (halves &- high &* 100) << 16 | high
    var digits = ((quarters &* 103) >> 10) & 0x000F_000F_000F_000F
    digits |= (quarters &- digits &* 10) << 8
    return digits | 0x3030_3030_3030_3030
  }

  /// Appends `value` in lower-case hexadecimal, zero-padded to `width` digits (at most 16;
  /// the low `width` digits when `value` has more).
  static func hex(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    var text = (hexDigits(value >> 32).littleEndian, hexDigits(value & 0xFFFF_FFFF).littleEndian)
    withUnsafeBytes(of: &text) { raw in
      bytes.append(
        contentsOf: UnsafeRawBufferPointer(rebasing: raw[(16 - max(0, min(width, 16)))...]))
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

  /// Appends `id` as 36 lower-case characters (8-4-4-4-12), as `uuidString.lowercased()`:
  /// four words of 8 digits (``hexDigits(_:)``) stored around the dashes.
  static func uuid(_ id: UUID, into bytes: inout [UInt8]) {
    let (high, low) = unsafeBitCast(id.uuid, to: (UInt64, UInt64).self)
    let (first, second) = (UInt64(bigEndian: high), UInt64(bigEndian: low))
    var text: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &text) { out in
      @inline(__always) func store(_ digits: UInt64, at: Int, split: Bool) {
        if split {
          out.storeBytes(
            of: UInt32(truncatingIfNeeded: digits).littleEndian, toByteOffset: at, as: UInt32.self)
          out.storeBytes(
            of: UInt32(truncatingIfNeeded: digits >> 32).littleEndian, toByteOffset: at + 5,
            as: UInt32.self)
        } else {
          out.storeBytes(of: digits.littleEndian, toByteOffset: at, as: UInt64.self)
        }
      }
      store(hexDigits(second & 0xFFFF_FFFF), at: 28, split: false)
      store(hexDigits(second >> 32), at: 19, split: true)
      store(hexDigits(first & 0xFFFF_FFFF), at: 9, split: true)
      store(hexDigits(first >> 32), at: 0, split: false)
      (out[8], out[13], out[18], out[23]) = (0x2D, 0x2D, 0x2D, 0x2D)  // "-"
      bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: out[..<36]))
    }
  }

  /// The 8 lower-case hexadecimal digits of `value` (0 to 2^32 - 1) as a little-endian word,
  /// the first digit in its lowest byte: the inverse of ``hexWord(_:lowercaseOnly:)``.
  @inline(__always)
  static func hexDigits(_ value: UInt64) -> UInt64 {
    // Halves, bytes, nibbles spread to a byte each, the first digit in the top byte.
    var nibbles = (value | value << 16) & 0x0000_FFFF_0000_FFFF
    nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
    nibbles = ((nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F).byteSwapped
    // "0" + n, and 39 more ("a" - "0" - 10) where n is 10 or more (n + 0x76 reaches 0x80).
    let letters = ((nibbles &+ 0x7676_7676_7676_7676) >> 7) & 0x0101_0101_0101_0101
    return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
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
  /// (a file name's canonical form). A first claim at depth parses one per pending name, and a
  /// claim two or three: the 32 digits are read as four words of 8 and each word checked and
  /// converted at once (``hexWord(_:lowercaseOnly:)``).
  static func parseUUID(_ bytes: UnsafeBufferPointer<UInt8>, lowercaseOnly: Bool) -> UUID? {
    guard let base = bytes.baseAddress, bytes.count == 36, base[8] == UInt8(ascii: "-"),
      base[13] == UInt8(ascii: "-"), base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-")
    else { return nil }
    let raw = UnsafeRawPointer(base)
    @inline(__always) func eight(_ at: Int) -> UInt64 {
      UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }
    @inline(__always) func four(_ at: Int) -> UInt64 {
      UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
    }
    // 8-4-4-4-12: the digits at 0..<8, 9..<13 and 14..<18, 19..<23 and 24..<28, 28..<36.
    guard let a = hexWord(eight(0), lowercaseOnly: lowercaseOnly),
      let b = hexWord(four(9) | four(14) << 32, lowercaseOnly: lowercaseOnly),
      let c = hexWord(four(19) | four(24) << 32, lowercaseOnly: lowercaseOnly),
      let d = hexWord(eight(28), lowercaseOnly: lowercaseOnly)
    else { return nil }
    // Two big-endian words are the 16 bytes of the UUID in order.
    let high = a << 32 | b
    let low = c << 32 | d
    return UUID(uuid: unsafeBitCast((high.bigEndian, low.bigEndian), to: uuid_t.self))
  }

  /// The value of 8 hexadecimal digits held in `word`, the first in its lowest byte (as loaded
  /// little-endian): 0 to 2^32 - 1; nil when a byte is not `0`-`9`, `a`-`f` or (unless
  /// `lowercaseOnly`) `A`-`F`. All 8 bytes at once (SIMD within a register): a byte below 0x80
  /// plus `0x80 - bound` has its top bit set exactly when it is at least `bound`, and never
  /// carries into the next byte.
  @inline(__always)
  static func hexWord(_ word: UInt64, lowercaseOnly: Bool) -> UInt64? {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let tops: UInt64 = 0x8080_8080_8080_8080
    guard word & tops == 0 else { return nil }
    @inline(__always) func within(_ first: UInt64, _ last: UInt64) -> UInt64 {
      (word &+ (0x80 - first) &* ones) & ~(word &+ (0x80 - last - 1) &* ones) & tops
    }
    var valid = within(0x30, 0x39) | within(0x61, 0x66)
    if !lowercaseOnly { valid |= within(0x41, 0x46) }
    guard valid == tops else { return nil }
    // A digit's value is its low 4 bits; a letter's (bit 6 set) its low 4 bits plus 9.
    var nibbles = (word & 0x0F0F_0F0F_0F0F_0F0F) &+ ((word >> 6) & ones) &* 9
    // The first digit to the top byte, then pairs of nibbles, of bytes, of halves packed.
    nibbles = nibbles.byteSwapped
    nibbles = (nibbles | nibbles >> 4) & 0x00FF_00FF_00FF_00FF
    nibbles = (nibbles | nibbles >> 8) & 0x0000_FFFF_0000_FFFF
    return (nibbles | nibbles >> 16) & 0xFFFF_FFFF
  }
}
