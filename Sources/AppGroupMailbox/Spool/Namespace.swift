/// The namespace rule: 1 to 64 bytes of `A-Z a-z 0-9 . _ -`, not all dots, not starting with
/// `-` (so a name is never taken for a command-line option).
///
/// Names are case-sensitive, as Linux file names are: `Jobs` and `jobs` are two namespaces (the
/// library and `mailboxctl` apply this same function). No accepted name can contain `/` or NUL or
/// be `.` or `..`, so a namespace never names a path outside the container.
enum NamespaceRule {
  static let maxBytes = 64

  static func isValid(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    guard (1...maxBytes).contains(bytes.count) else { return false }
    guard !bytes.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return false }
    guard bytes.first != UInt8(ascii: "-") else { return false }
    return bytes.allSatisfy { byte in
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "-"):
        true
      default: false
      }
    }
  }
}

/// The namespace rule, public so tools (such as `mailboxctl`) check names exactly as the library
/// does: 1 to 64 bytes of `A-Z a-z 0-9 . _ -`, not all dots, not starting with `-`,
/// case-sensitive (`Jobs` and `jobs`
/// are two namespaces, as they are two directories on Linux).
public enum AppGroupMailboxNamespace {
  /// The longest namespace in bytes: 64.
  public static let maxBytes = NamespaceRule.maxBytes

  /// Whether `name` is a valid namespace. A valid name cannot contain `/` or NUL and is never
  /// `.` or `..`, so it always names a directory inside the container.
  public static func isValid(_ name: String) -> Bool { NamespaceRule.isValid(name) }
}
