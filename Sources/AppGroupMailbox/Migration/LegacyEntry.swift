import Foundation

/// One entry of a namespace directory in the layout of the Apple package AppGroupMailbox
/// (github.com/adamtheturtle/AppGroupMailbox, release 0.2.1), which keeps every file flat in
/// `<container>/AppGroupMailbox/<namespace>/`:
///
/// - `pending-<ordinal: 20 digits>-<UUID>.json`: a pending message; the ordinal is
///   max(now in milliseconds, highest ordinal + 1).
/// - `claimed-<claim UUID>-<pending name>`: a claimed message, renamed back to its pending name
///   on release or recovery.
/// - `quarantine-<milliseconds>-<UUID>.bin`: a quarantined file.
/// - `.mailbox.lock`: the file each operation holds with flock(2) `LOCK_EX`.
///
/// A message file is the `JSONEncoder` encoding of `{"id": UUID, "enqueuedAt": Date, "message":
/// Message}`, the date as seconds since 2001-01-01 (the default `deferredToDate` strategy). The
/// package orders pending messages by (`enqueuedAt`, file name).
struct LegacyEntry: Sendable, Equatable {
  enum Kind: Sendable, Equatable {
    case pending
    case claimed
    case quarantined
  }

  var kind: Kind
  /// The entry's name in the namespace directory; for a name that is not valid UTF-8, a
  /// repaired copy (see ``exactName``).
  var name: String
  /// The name to hand to system calls: differs from ``name`` only for invalid UTF-8 (never a
  /// name the old format wrote: such an entry is not a readable message).
  var exactName: EntryName
  /// The pending name: `name` itself, or a claim's original name (the whole name when the claim's
  /// name does not parse).
  var originalName: String

  /// The lock file every operation of the old format holds.
  static let lockName = ".mailbox.lock"

  /// Classifies `name` (`exactName` its bytes when they are not valid UTF-8); nil for names the
  /// old format does not write (our areas, hidden files).
  init?(name: String, exactName: EntryName? = nil) {
    self.name = name
    self.exactName = exactName ?? .text(name)
    if name.hasPrefix("pending-") {
      kind = .pending
      originalName = name
    } else if name.hasPrefix("claimed-") {
      kind = .claimed
      originalName = Self.originalName(ofClaim: name) ?? name
    } else if name.hasPrefix("quarantine-") {
      kind = .quarantined
      originalName = name
    } else {
      return nil
    }
  }

  /// The old-format entries of the directory at `directory` (an open descriptor), names that
  /// are not valid UTF-8 included: what `mailboxctl migrate` converts, and what the other
  /// commands count to refuse an unconverted directory. - Complexity: O(n) in its entries.
  static func list(_ directory: Int32) throws -> [LegacyEntry] {
    try Syscall.list(directory).compactMap { LegacyEntry(name: $0.name, exactName: $0.exactName) }
  }

  /// `claimed-<36-character UUID>-<pending-….json>` gives the pending name; nil otherwise.
  static func originalName(ofClaim name: String) -> String? {
    let rest = name.dropFirst("claimed-".count)
    guard rest.count > 37, UUID(uuidString: String(rest.prefix(36))) != nil,
      rest.dropFirst(36).first == "-"
    else { return nil }
    let original = String(rest.dropFirst(37))
    guard original.hasPrefix("pending-"), original.hasSuffix(".json") else { return nil }
    return original
  }
}

/// A message decoded from an old-format file.
struct LegacyMessage: Sendable, Equatable {
  var id: UUID
  /// Seconds since 2001-01-01 (`Date.timeIntervalSinceReferenceDate`).
  var enqueuedAt: Double
  /// The bytes of the `message` value exactly as stored: the encoded message.
  var payload: Data

  /// The enqueue date in microseconds since 1970 as this format stores it; nil when it lies
  /// outside what it can store (before 1970-01-01, or after ``MessageKey/maxMicros``,
  /// 2286-11-20), which an import would have to change.
  var micros: Int64? {
    let micros = Date(timeIntervalSinceReferenceDate: enqueuedAt).timeIntervalSince1970.microseconds
    return (0...MessageKey.maxMicros).contains(micros) ? micros : nil
  }

  /// Decodes an old-format message file; nil when it is not one (not a JSON object, a missing or
  /// invalid `id`, `enqueuedAt` or `message`). - Complexity: O(n) in the bytes.
  init?(decoding bytes: [UInt8]) {
    guard
      let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
      let idText = object["id"] as? String, let id = UUID(uuidString: idText),
      let date = (object["enqueuedAt"] as? NSNumber)?.doubleValue, date.isFinite,
      let range = JSONMemberScanner.valueRange(of: "message", in: bytes)
    else { return nil }
    self.id = id
    self.enqueuedAt = date
    self.payload = Data(bytes[range])
  }
}

/// Finds the bytes of one member's value in a JSON object without decoding it, so a message is
/// carried over byte for byte.
enum JSONMemberScanner {
  /// The range of the value of the top-level member `key` (an unescaped name) of the JSON object
  /// `bytes`; nil when `bytes` is not an object or has no such member. The input is assumed to
  /// be valid JSON (checked by the caller). - Complexity: O(n).
  static func valueRange(of key: String, in bytes: [UInt8]) -> Range<Int>? {
    var index = skipSpace(bytes, 0)
    guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
    index += 1
    let wanted = Array(key.utf8)
    while true {
      index = skipSpace(bytes, index)
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
      let nameEnd = skipString(bytes, index)
      let name = bytes[(index + 1)..<max(index + 1, nameEnd - 1)]
      index = skipSpace(bytes, nameEnd)
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
      let start = skipSpace(bytes, index + 1)
      let end = skipValue(bytes, start)
      guard end > start, end <= bytes.count else { return nil }
      if Array(name) == wanted { return start..<end }
      index = skipSpace(bytes, end)
      guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
      index += 1
    }
  }

  private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
    var index = start
    while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    return index
  }

  /// The index after the string that opens at `start`.
  private static func skipString(_ bytes: [UInt8], _ start: Int) -> Int {
    var index = start + 1
    while index < bytes.count {
      switch bytes[index] {
      case UInt8(ascii: "\\"): index += 2
      case UInt8(ascii: "\""): return index + 1
      default: index += 1
      }
    }
    return bytes.count + 1
  }

  /// The index after the value that starts at `start`.
  private static func skipValue(_ bytes: [UInt8], _ start: Int) -> Int {
    guard start < bytes.count else { return start }
    switch bytes[start] {
    case UInt8(ascii: "\""):
      return skipString(bytes, start)
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      var depth = 0
      var index = start
      while index < bytes.count {
        switch bytes[index] {
        case UInt8(ascii: "\""):
          index = skipString(bytes, index)
          continue
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
          depth -= 1
          if depth == 0 { return index + 1 }
        default: break
        }
        index += 1
      }
      return bytes.count + 1
    default:
      var index = start
      while index < bytes.count, !",}] \t\r\n".utf8.contains(bytes[index]) { index += 1 }
      return index
    }
  }
}
