import AppGroupMailbox
import Foundation

/// The long-running handler protocol of `drain --coprocess`, version 1 (docs/HANDLER-PROTOCOL.md):
/// JSON Lines both ways. drain greets with the versions it speaks; the handler answers with the
/// one it chose; then each request is a message line and each answer names a message and what
/// to do with it, in any order.
enum HandlerProtocol {
  /// The protocol's name in both greetings.
  static let name = "mailboxctl-handler"
  /// The versions this mailboxctl speaks.
  static let versions = [1]
  /// The answers this mailboxctl understands.
  static let capabilities = ["ack", "release", "retry", "deadletter"]
  /// The longest answer line accepted, in bytes.
  static let maximumLine = 1 << 20

  /// drain's greeting (one line, without the line break).
  static func greeting(jobs: Int) -> String {
    let list = { (items: [String]) in "[" + items.joined(separator: ",") + "]" }
    return "{\"protocol\":\"\(name)\",\"versions\":\(list(versions.map(String.init))),"
      + "\"capabilities\":\(list(capabilities.map(JSONText.string))),\"jobs\":\(jobs)}"
  }

  /// What the handler asks drain to do with one message.
  enum Answer: Equatable {
    /// Delivered: acknowledge (delete) it.
    case ack
    /// Failed: release it with drain's retry policy (`--retry-delay`...).
    case release
    /// Release it, claimable again after `after` seconds (0: at once).
    case retry(after: Double)
    /// Give up: move it to quarantine as a dead letter.
    case deadLetter(reason: String)
  }

  /// Parses the handler's greeting: the version it chose and its capabilities.
  /// - Returns: the failure as text when the line is no greeting or the version is not one of
  ///   ``versions``.
  static func parseGreeting(_ line: Data) -> Result<(version: Int, capabilities: [String]), Fault> {
    let read = object(line)
    if case .failure(.nameTwice) = read {
      return .failure(Fault("its greeting \(Refusal.nameTwice.rawValue)"))
    }
    guard case .success(let object) = read, object["protocol"] as? String == name else {
      return .failure(Fault("its first line is not a \(name) greeting"))
    }
    // `1.0` and `1e0` are no integers; JSONSerialization gives those as doubles, as it does an
    // integer past UInt64's range (one past Int's comes unsigned): such a version is shown as
    // a number, never wrapped around.
    guard let chosen = number(object["version"]),
      integer(chosen) != nil || abs(chosen.doubleValue) >= 0x1p63
    else {
      return .failure(Fault("its greeting has no integer \"version\""))
    }
    guard let version = integer(chosen), versions.contains(version) else {
      return .failure(
        Fault(
          "it speaks protocol version \(integer(chosen).map(String.init) ?? chosen.stringValue); "
            + "this mailboxctl speaks " + versions.map(String.init).joined(separator: ", ")))
    }
    return .success((version, object["capabilities"] as? [String] ?? []))
  }

  /// Parses one answer line: `{"id": "<uuid>", "action": "ack" | "release" | "retry" |
  /// "deadletter", "after": seconds (retry), "reason": text (deadletter)}`.
  static func parseAnswer(_ line: Data) -> Result<(id: String, answer: Answer), Fault> {
    let object: [String: Any]
    switch Self.object(line) {
    case .success(let read): object = read
    case .failure(let refusal): return .failure(Fault("a line that \(refusal.rawValue)"))
    }
    guard let id = (object["id"] as? String)?.lowercased() else {
      return .failure(Fault("an answer without a string \"id\""))
    }
    switch object["action"] as? String {
    case "ack": return .success((id, .ack))
    case "release": return .success((id, .release))
    case "retry":
      guard let after = number(object["after"])?.doubleValue, after.isFinite, after >= 0,
        after <= 1e9
      else {
        return .failure(Fault("a retry without \"after\" seconds from 0 to 1e9"))
      }
      return .success((id, .retry(after: after)))
    case "deadletter":
      return .success((id, .deadLetter(reason: object["reason"] as? String ?? "")))
    default:
      return .failure(Fault("an answer whose \"action\" is none of \(capabilities)"))
    }
  }

  /// Why a line is not an object of the protocol, as the end of "a line that …".
  enum Refusal: String, Error {
    case notObject = "is not a JSON object"
    case nameTwice = "gives a member name twice, or one that is not valid Unicode"
    case outOfRange = """
      holds what JSON readers refuse: a number past a double's range, a lone surrogate \
      escape, or nesting deeper than 512
      """
  }

  /// The JSON object of one line, read as the file formats are (docs/FORMAT.md): by RFC 8259's
  /// grammar with each member name once (JSON readers disagree about which of two counts:
  /// Foundation's JSONSerialization and Python's json take the last, others the first), then
  /// by JSONSerialization, which also refuses a number past a double's range and a lone
  /// surrogate escape the grammar allows.
  /// - Complexity: O(n) in the line's bytes.
  static func object(_ line: Data) -> Result<[String: Any], Refusal> {
    let distinct = line.withUnsafeBytes { bytes -> Bool? in
      guard let members = JSONSyntax.objectMembers(bytes) else { return nil }
      return JSONSyntax.byDistinctName(members, in: bytes) != nil
    }
    guard let distinct else { return .failure(.notObject) }
    guard distinct else { return .failure(.nameTwice) }
    guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else {
      return .failure(.outOfRange)
    }
    return .success(object)
  }

  /// `value` as JSONSerialization gives a JSON number, or nil: `true` and `false` come as
  /// NSNumber too (objCType `c`), and are not numbers.
  static func number(_ value: Any?) -> NSNumber? {
    guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else {
      return nil
    }
    return number
  }

  /// `value` as a JSON integer written as one (no fraction or exponent: `1`, not `1.0` or
  /// `1e0`, which JSONSerialization gives as doubles) within Int's range, or nil.
  static func integer(_ value: Any?) -> Int? {
    guard let number = number(value), !["d", "f"].contains(String(cString: number.objCType))
    else { return nil }
    return Int(exactly: number)
  }

  /// Why a handler's line was refused.
  struct Fault: Error, Equatable {
    var text: String
    init(_ text: String) { self.text = text }
  }
}
