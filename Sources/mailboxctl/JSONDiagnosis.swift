import Foundation

/// Says why a message that failed the mailbox's JSON check (``AppGroupRawMailbox/validate``) is
/// not one JSON value, and refuses text the check lets through but a JSON Lines reader would
/// not: input that is not UTF-8 (JSONSerialization also reads UTF-16 and UTF-32) or that
/// starts with a byte order mark. It never decides validity itself: "more than one value" is
/// said only when the first value alone passes the mailbox's check.
enum JSONDiagnosis {
  /// The deepest nesting of arrays and objects the mailbox's JSON check accepts (Foundation's
  /// JSONSerialization: 512 nested arrays parse, 513 do not, measured with swift 6.3 on Linux).
  static let maximumDepth = 512

  /// Whether `byte` is JSON whitespace (RFC 8259 section 2: space, tab, LF, CR).
  static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// Why `message` (trimmed, see ``EnqueueInput``) may not be stored although the JSON check
  /// might pass it: not UTF-8, a NUL byte, or a byte order mark; nil when none applies.
  static func encodingProblem(_ message: Data) -> String? {
    if message.starts(with: [0xEF, 0xBB, 0xBF]) {
      return "a byte order mark is allowed only at the start of the input (or of a line)"
    }
    if message.contains(0) || String(bytes: message, encoding: .utf8) == nil {
      return "not UTF-8 text (JSON text must be UTF-8, RFC 8259 section 8.1)"
    }
    return nil
  }

  /// Why `message` is not one JSON value: empty, nested too deeply, more than one value, or
  /// plain invalid. `firstLine` is the input line `message` starts on, for saying where a second
  /// value starts; nil for a line of `--lines` input. `isValue` is the mailbox's JSON check.
  static func reason(_ message: Data, firstLine: Int?, isValue: (Data) -> Bool) -> String {
    let bytes = [UInt8](message)
    guard !bytes.isEmpty else { return "empty input: no JSON value" }
    let (end, depth) = scan(bytes)
    if depth > maximumDepth {
      return "arrays and objects nested more than \(maximumDepth) deep"
    }
    var next = end
    while next < bytes.count, isWhitespace(bytes[next]) { next += 1 }
    if next > 0, next < bytes.count, isValue(Data(bytes[..<end])) {
      guard let firstLine else { return "more than one JSON value on the line" }
      let line = firstLine + bytes[..<next].filter { $0 == 0x0A }.count
      return "more than one JSON value (the second starts on line \(line)); "
        + "use --lines for one message a line"
    }
    return "not valid JSON"
  }

  /// Where the first value of `bytes` ends (an index just past it) and the deepest nesting of
  /// arrays and objects anywhere in `bytes`, skipping string contents. A structural scan only.
  private static func scan(_ bytes: [UInt8]) -> (end: Int, depth: Int) {
    var depth = 0
    var deepest = 0
    var inString = false
    var escaped = false
    var end: Int?
    let scalar = !["{", "[", "\""].map { UInt8(ascii: $0) }.contains(bytes[0])
    for (index, byte) in bytes.enumerated() {
      if inString {
        if escaped {
          escaped = false
        } else if byte == UInt8(ascii: "\\") {
          escaped = true
        } else if byte == UInt8(ascii: "\"") {
          inString = false
          if depth == 0, end == nil { end = index + 1 }
        }
        continue
      }
      switch byte {
      case UInt8(ascii: "\""):
        inString = true
      case UInt8(ascii: "["), UInt8(ascii: "{"):
        depth += 1
        deepest = max(deepest, depth)
      case UInt8(ascii: "]"), UInt8(ascii: "}"):
        depth = max(0, depth - 1)
        if depth == 0, end == nil { end = index + 1 }
      default:
        if scalar, end == nil, isWhitespace(byte) || byte == UInt8(ascii: ",") {
          end = index
        }
      }
      if scalar, end == nil, index > 0,
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "[")
          || byte == UInt8(ascii: "{")
      {
        end = index
      }
    }
    return (end ?? bytes.count, deepest)
  }
}
