import Foundation

/// A check that bytes are one JSON value (RFC 8259, section 2: any top-level value), made in one
/// pass without building the value, so the untyped mailbox can pass a message on without
/// decoding it.
///
/// ``verdict(_:)`` follows the grammar of RFC 8259 exactly (sections 2 to 7), so it knows
/// what is not JSON: a trailing comma, a missing value, a leading zero, a byte order mark,
/// text that is not UTF-8 (section 8.1). What the grammar allows but a reader may still refuse
/// (a `\u` escape of a surrogate or of NUL, a number with an exponent or more than 15 digits,
/// nesting deeper than ``maximumDepth``) it leaves to JSONSerialization. Foundation's parsers
/// accept some text that is not JSON (a trailing comma in an array or object), so a producer
/// checks with the verdict first (``AppGroupRawMailbox/isJSON(_:)``), and what the verdict
/// calls invalid is never stored. ``isCertainlyValid(_:)`` accepts a subset of what
/// JSONSerialization accepts; tests compare the two on generated inputs.
package enum JSONSyntax {
  /// The deepest nesting that can be certainly valid; deeper input is judged by the grammar,
  /// then goes to JSONSerialization.
  static let maximumDepth = 100

  /// What the grammar says of some bytes.
  enum Verdict: Equatable, Sendable {
    /// One JSON value, which JSONSerialization also accepts.
    case valid
    /// Not one JSON value in UTF-8 text (RFC 8259).
    case invalid
    /// Grammatical, but with a part only a full parser can judge (see ``JSONSyntax``).
    case unsure
  }

  /// Whether `bytes` is certainly one JSON value that JSONSerialization also accepts. False
  /// means invalid or not sure.
  /// - Complexity: as ``verdict(_:)``.
  static func isCertainlyValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
    verdict(bytes) == .valid
  }

  /// What the grammar of RFC 8259 says of `bytes` (see ``Verdict``).
  /// - Complexity: O(n) in the bytes; no allocation but a stack of one byte per open
  ///   container.
  static func verdict(_ bytes: UnsafeRawBufferPointer) -> Verdict {
    var scanner = Scanner(bytes: bytes)
    guard scanner.value(), scanner.atEnd else { return .invalid }
    if scanner.sawNonASCII, String(validating: bytes, as: UTF8.self) == nil { return .invalid }
    return scanner.unsure ? .unsure : .valid
  }

  /// Where the grammar stops reading `bytes` when they are not one JSON value: the offset of
  /// the byte it could not take (at most one past it), `bytes.count` when the input ends
  /// inside the value, or nil when the grammar accepts them (JSONSerialization may still
  /// refuse what ``Verdict/unsure`` covers). For telling a user where their JSON goes wrong.
  /// - Complexity: as ``verdict(_:)``.
  static func stopOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
    var scanner = Scanner(bytes: bytes)
    guard scanner.value(), scanner.atEnd else { return min(scanner.index, bytes.count) }
    return nil
  }

  /// The grammar's cursor, shared with ``objectMembers(_:)`` (JSONObjectMembers.swift).
  struct Scanner {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    var sawNonASCII = false
    /// A part seen that only a full parser can judge (see ``JSONSyntax``).
    var unsure = false
    /// Open containers, innermost last: true for an object.
    var open: [Bool] = []

    init(bytes: UnsafeRawBufferPointer) {
      self.bytes = bytes
      open.reserveCapacity(16)
    }

    var atEnd: Bool {
      mutating get {
        skipSpace()
        return index == bytes.count
      }
    }

    mutating func skipSpace() {
      while index < bytes.count {
        switch bytes[index] {
        case 0x20, 0x09, 0x0A, 0x0D: index += 1
        default: return
        }
      }
    }

    mutating func take(_ byte: UInt8) -> Bool {
      skipSpace()
      guard index < bytes.count, bytes[index] == byte else { return false }
      index += 1
      return true
    }

    /// One value and everything nested in it, iteratively (no recursion on hostile depth).
    mutating func value() -> Bool {
      while true {
        skipSpace()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
          let isObject = bytes[index] == UInt8(ascii: "{")
          index += 1
          if open.count >= JSONSyntax.maximumDepth { unsure = true }
          if take(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) { break }
          open.append(isObject)
          if isObject, !member() { return false }
          continue
        case UInt8(ascii: "\""):
          guard string() else { return false }
        case UInt8(ascii: "t"): guard literal("true") else { return false }
        case UInt8(ascii: "f"): guard literal("false") else { return false }
        case UInt8(ascii: "n"): guard literal("null") else { return false }
        default: guard number() else { return false }
        }
        // A value ended: close containers or go on to the next element.
        while let isObject = open.last {
          if take(UInt8(ascii: ",")) {
            if isObject, !member() { return false }
            break
          }
          guard take(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
          open.removeLast()
        }
        if open.isEmpty { return true }
      }
    }

    /// A member's name and colon.
    mutating func member() -> Bool {
      skipSpace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), string() else { return false }
      return take(UInt8(ascii: ":"))
    }

    mutating func literal(_ word: StaticString) -> Bool {
      let count = word.utf8CodeUnitCount
      guard bytes.count - index >= count else { return false }
      for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
        return false
      }
      index += count
      return true
    }

    /// A string from its opening quote: no control character, only the escapes of RFC 8259,
    /// section 7.
    mutating func string() -> Bool {
      index += 1
      while index < bytes.count {
        // 64, 16, then 8 bytes at a time while none of them ends the string or needs a look (a
        // payload is mostly long strings): vector compares and one branch instead of a branch
        // a byte.
        index = Self.plainRun(bytes, from: index)
        guard index < bytes.count else { return false }  // no closing quote
        if bytes.count - index >= 8,
          Self.marks(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) == 0
        {
          index += 8
          continue
        }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return true
        case 0..<0x20: return false
        case 0x80...: sawNonASCII = true
        case UInt8(ascii: "\\"):
          guard index < bytes.count else { return false }
          let escaped = bytes[index]
          index += 1
          switch escaped {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            continue
          case UInt8(ascii: "u"):
            guard let unit = hexUnit() else { return false }
            if unit == 0 || (0xD800...0xDFFF).contains(unit) { unsure = true }
          default: return false
          }
        default: continue
        }
      }
      return false
    }

    /// The bytes that mark a position in a string as needing a look, per lane: a quote, a
    /// backslash, or (as a signed byte below 0x20) a control character or a byte that is not
    /// ASCII. Exact: no such byte is missed and no other byte is marked.
    @inline(__always)
    static func marks(_ v: SIMD16<Int8>) -> SIMDMask<SIMD16<Int8>> {
      let quote = SIMD16<Int8>(repeating: Int8(UInt8(ascii: "\"")))
      let backslash = SIMD16<Int8>(repeating: Int8(UInt8(ascii: "\\")))
      return (v .== quote) .| (v .== backslash) .| (v .< SIMD16<Int8>(repeating: 0x20))
    }

    /// Whether `mask` marks any lane, without the standard library's `any(_:)` (a call to a
    /// generic reduction per use): the mask's 16 lanes are all-ones or zero bytes.
    @inline(__always)
    static func isAnySet(_ mask: SIMDMask<SIMD16<Int8>>) -> Bool {
      let lanes = unsafeBitCast(mask, to: SIMD2<UInt64>.self)
      return lanes[0] | lanes[1] != 0
    }

    /// Whether any of the 16 bytes of `v` is marked (a quote, a backslash, a control
    /// character, or not ASCII).
    @inline(__always)
    static func anyMark16(_ v: SIMD16<Int8>) -> Bool { isAnySet(marks(v)) }

    /// Where the run of unmarked bytes from `start` stops being provable 16 bytes at a time:
    /// `start` advanced by 64 bytes while none of them is marked (four vectors, their marks
    /// joined, one test), then by 16 likewise; never past the end, and the byte path decides
    /// what is left (fewer than 16 bytes, or a block with a marked byte).
    static func plainRun(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
      guard let base = bytes.baseAddress, start >= 0 else { return start }
      let end = bytes.count
      var index = start
      func vector(_ at: Int) -> SIMD16<Int8> {
        base.loadUnaligned(fromByteOffset: at, as: SIMD16<Int8>.self)
      }
      while end &- index >= 64 {
        let joined =
          marks(vector(index)) .| marks(vector(index &+ 16)) .| marks(vector(index &+ 32))
          .| marks(vector(index &+ 48))
        if isAnySet(joined) { break }
        index &+= 64
      }
      while end &- index >= 16, !anyMark16(vector(index)) { index &+= 16 }
      return index
    }

    /// Nonzero when any of the eight bytes of `word` is a quote, a backslash, a control
    /// character or not ASCII: the exact "has a byte less than n" and "has a zero byte" word
    /// tests (Hacker's Delight, section 6-1), which never miss such a byte.
    @inline(__always)
    static func marks(_ word: UInt64) -> UInt64 {
      let ones: UInt64 = 0x0101_0101_0101_0101
      let highs: UInt64 = 0x8080_8080_8080_8080
      let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
      let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
      let control = (word &- ones &* 0x20) & ~word
      let found = control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
      return (found | word) & highs
    }

    mutating func hexUnit() -> UInt16? {
      guard bytes.count - index >= 4 else { return nil }
      var unit: UInt16 = 0
      for _ in 0..<4 {
        let byte = bytes[index]
        let digit: UInt8
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
        default: return nil
        }
        unit = unit << 4 | UInt16(digit)
        index += 1
      }
      return unit
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259, section 6); more than
    /// 15 digits or an exponent is left to JSONSerialization (a value out of Double's range is
    /// its call).
    mutating func number() -> Bool {
      if bytes[index] == UInt8(ascii: "-") { index += 1 }
      var digits = 0
      func isDigit(_ at: Int) -> Bool {
        at < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at])
      }
      guard isDigit(index) else { return false }
      if bytes[index] == UInt8(ascii: "0") {
        index += 1
        digits = 1
        if isDigit(index) { return false }
      } else {
        while isDigit(index) {
          index += 1
          digits += 1
        }
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
        index += 1
        guard isDigit(index) else { return false }
        while isDigit(index) {
          index += 1
          digits += 1
        }
      }
      if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
        index += 1
        if index < bytes.count,
          bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
        {
          index += 1
        }
        guard isDigit(index) else { return false }
        while isDigit(index) { index += 1 }
        unsure = true
      }
      if digits > 15 { unsure = true }
      return true
    }
  }
}
