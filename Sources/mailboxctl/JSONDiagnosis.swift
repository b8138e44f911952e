import AppGroupMailbox
import Foundation

/// Says why a message failed the mailbox's check (``AppGroupRawMailbox/validate``: one JSON
/// value, UTF-8 text without a byte order mark). It never decides validity itself: it runs only
/// after the check refused, and "more than one value" is said only when the first value alone
/// and the second alone each pass the check (a value followed by other text, such as a
/// `// comment`, is invalid JSON with text after the value).
enum JSONDiagnosis {
  /// The deepest nesting of arrays and objects the mailbox's JSON check accepts (Foundation's
  /// JSONSerialization: 512 nested arrays parse, 513 do not, measured with swift 6.3 on Linux).
  static let maximumDepth = 512

  /// Whether `byte` is JSON whitespace (RFC 8259 section 2: space, tab, LF, CR).
  static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// Why `message` (trimmed, see ``EnqueueInput``) was refused: a byte order mark inside the
  /// input, not UTF-8 (or a NUL byte, as in UTF-16 and UTF-32), empty, nested too deeply, more
  /// than one value, or plain invalid. `firstLine` is the input line `message` starts on, for saying where a second
  /// value starts; nil for a line of `--lines` input. `isValue` is the mailbox's JSON check.
  /// `position` says where in the input an offset in `message` is (`line 2, column 7`), for
  /// invalid JSON: where the grammar stopped reading (``JSONSyntax/stopOffset(_:)``).
  static func reason(
    _ message: Data, firstLine: Int?, position: (Int) -> String, isValue: (Data) -> Bool
  ) -> String {
    if message.starts(with: [0xEF, 0xBB, 0xBF]) {
      return "a byte order mark is allowed only at the start of the input (or of a line)"
    }
    if message.contains(0) || String(validating: message, as: UTF8.self) == nil {
      return "not UTF-8 text (JSON text must be UTF-8, RFC 8259 section 8.1)"
    }
    let bytes = [UInt8](message)
    guard !bytes.isEmpty else { return "empty input: no JSON value" }
    let (end, depth) = scan(bytes)
    if depth > maximumDepth {
      return "arrays and objects nested more than \(maximumDepth) deep"
    }
    var next = end
    while next < bytes.count, isWhitespace(bytes[next]) { next += 1 }
    if next > 0, next < bytes.count, isValue(Data(bytes[..<end])) {
      let line = firstLine.map { $0 + bytes[..<next].filter { $0 == 0x0A }.count }
      let rest = Array(bytes[next...])
      guard isValue(Data(rest[..<scan(rest).end])) else {
        return "not valid JSON: text that is not a JSON value follows the value"
          + (line.map { " (from line \($0))" } ?? "")
      }
      guard let line else { return "more than one JSON value on the line" }
      return "more than one JSON value (the second starts on line \(line)); "
        + "use --lines for one message a line"
    }
    guard let stop = AppGroupRawMailbox.jsonStopOffset(message) else { return "not valid JSON" }
    if stop >= bytes.count { return "not valid JSON: it ends inside the value" }
    return "not valid JSON near \(position(stop))"
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
