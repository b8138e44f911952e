import Foundation

/// The members of one JSON object, for the file formats' readers (docs/FORMAT.md: a header line,
/// the settings file), which must read a file one way whatever JSON reader another process uses.
extension JSONSyntax {
  /// One member of a JSON object: where its name lies between the quotes (escapes not undone)
  /// and where its value's text lies, as byte offsets.
  package struct Member: Equatable, Sendable {
    package var name: Range<Int>
    package var value: Range<Int>
  }

  /// The members of `bytes`, in order, when the bytes are one JSON object by the grammar of
  /// RFC 8259 (sections 2 to 8.1, as ``verdict(_:)``: no trailing comma, no `NaN`, UTF-8);
  /// nil otherwise. Nested values are checked by the grammar but not split. The parts
  /// ``verdict(_:)`` leaves to a full parser pass here; the caller's parser still judges them.
  /// - Complexity: O(n) in the bytes.
  package static func objectMembers(_ bytes: UnsafeRawBufferPointer) -> [Member]? {
    var scanner = Scanner(bytes: bytes)
    guard scanner.take(UInt8(ascii: "{")) else { return nil }
    var members: [Member] = []
    if !scanner.take(UInt8(ascii: "}")) {
      repeat {
        scanner.skipSpace()
        let nameStart = scanner.index
        guard nameStart < bytes.count, bytes[nameStart] == UInt8(ascii: "\""), scanner.string()
        else { return nil }
        let nameEnd = scanner.index - 1  // the closing quote
        guard scanner.take(UInt8(ascii: ":")) else { return nil }
        scanner.skipSpace()
        let valueStart = scanner.index
        guard scanner.value() else { return nil }
        members.append(Member(name: (nameStart + 1)..<nameEnd, value: valueStart..<scanner.index))
      } while scanner.take(UInt8(ascii: ","))
      guard scanner.take(UInt8(ascii: "}")) else { return nil }
    }
    guard scanner.atEnd else { return nil }
    if scanner.sawNonASCII, String(validating: bytes, as: UTF8.self) == nil { return nil }
    return members
  }

  /// The members of `bytes` by name, each with where its value's text lies, when the bytes are
  /// one JSON object (``objectMembers(_:)``) whose member names are all different and valid
  /// Unicode once their escapes are undone; nil otherwise. Names are compared by their UTF-8
  /// bytes (Unicode scalars, as Python compares them), not by `String`'s canonical equivalence.
  /// Readers of a name given twice disagree (Foundation's `JSONDecoder` takes the first, its
  /// `JSONSerialization` and Python's `json` the last), and Foundation's parsers accept a trailing
  /// comma that Python's refuses: the file formats refuse both (docs/FORMAT.md).
  /// - Complexity: O(n) in the bytes.
  package static func distinctMembers(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]: Range<Int>]? {
    objectMembers(bytes).flatMap { byDistinctName($0, in: bytes) }
  }

  /// `members` of `bytes` (``objectMembers(_:)``) by name, as ``distinctMembers(_:)`` says;
  /// nil when a name repeats or does not decode. For a caller that also needs to know the bytes
  /// were one object, without scanning them twice.
  package static func byDistinctName(
    _ members: [Member], in bytes: UnsafeRawBufferPointer
  ) -> [[UInt8]: Range<Int>]? {
    var byName: [[UInt8]: Range<Int>] = [:]
    for member in members {
      let text = UnsafeRawBufferPointer(rebasing: bytes[member.name])
      let name: [UInt8]
      if text.contains(UInt8(ascii: "\\")) {
        // Escapes undone by the toolchain's decoder; a lone surrogate does not decode.
        var quoted = Data([UInt8(ascii: "\"")])
        quoted.append(contentsOf: text)
        quoted.append(UInt8(ascii: "\""))
        guard let decoded = try? JSONDecoder().decode(String.self, from: quoted) else { return nil }
        name = Array(decoded.utf8)
      } else {
        name = Array(text)  // valid UTF-8: the grammar checked
      }
      guard byName.updateValue(member.value, forKey: name) == nil else { return nil }
    }
    return byName
  }

  /// Whether `text` is an integer by RFC 8259's number grammar: an optional minus and digits,
  /// with neither a fraction nor an exponent (`1`, not `1.0` or `1e0`).
  /// Whether the value `text` is a number (it starts as RFC 8259's number grammar does: a
  /// minus or a digit), not a string, literal, object or array. Valid JSON text assumed.
  static func isNumber(_ text: some Collection<UInt8>) -> Bool {
    guard let first = text.first else { return false }
    return first == UInt8(ascii: "-") || first &- UInt8(ascii: "0") < 10
  }

  static func isIntegerLiteral(_ text: UnsafeRawBufferPointer) -> Bool {
    let digits = text.first == UInt8(ascii: "-") ? text.dropFirst() : text[...]
    return !digits.isEmpty && digits.allSatisfy { $0 &- UInt8(ascii: "0") < 10 }
  }
}
