import Foundation

/// Builds file names byte by byte: zero-padded decimal and hexadecimal fields and lower-case
/// UUIDs, without the intermediate strings of `String(value)`, `String(repeating:count:)` and
/// `uuidString.lowercased()` (a claim formats two names; this is on the hot path).
enum NameBytes {
  private static let hexDigits = Array("0123456789abcdef".utf8)

  /// Appends `value` in decimal, zero-padded to at least `width` digits.
  static func decimal(_ value: UInt64, width: Int, into bytes: inout [UInt8]) {
    var digits: (UInt64, Int) = (value, 0)
    var scratch = [UInt8](repeating: UInt8(ascii: "0"), count: max(width, 20))
    var index = scratch.count
    repeat {
      index -= 1
      scratch[index] = UInt8(ascii: "0") + UInt8(digits.0 % 10)
      digits.0 /= 10
      digits.1 += 1
    } while digits.0 > 0
    let start = min(index, scratch.count - width)
    bytes.append(contentsOf: scratch[start...])
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
