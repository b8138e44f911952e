public import Foundation
import Glibc

/// Where app group containers live on Linux.
public enum AppGroupContainer {
  /// The container directory of the app group `identifier`.
  ///
  /// `$APP_GROUP_CONTAINER_ROOT/<identifier>` when that variable is set and not empty, else
  /// `$XDG_DATA_HOME/app-groups/<identifier>` when that is an absolute path (XDG Base Directory
  /// Specification), else `$HOME/.local/share/app-groups/<identifier>`.
  ///
  /// An identifier is 1 to 255 bytes of `A-Z a-z 0-9 . _ -`, not starting with a dot (so
  /// `group.com.example.app` works and nothing can name a path outside the root).
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` for an invalid identifier
  ///   (operation `"check app group identifier"`, errno `EINVAL`) or when no root can be found
  ///   (no variable and no home directory: operation `"find container root"`, errno `ENOENT`).
  public static func url(
    forIdentifier identifier: String,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws -> URL {
    guard isValid(identifier) else {
      throw AppGroupMailboxError.containerUnavailable(
        .init(
          operation: "check app group identifier", systemCall: "",
          errno: Errno.invalidArgument.rawValue))
    }
    if let root = environment["APP_GROUP_CONTAINER_ROOT"], !root.isEmpty {
      return URL(fileURLWithPath: root, isDirectory: true).appendingPathComponent(identifier)
    }
    if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
      return URL(fileURLWithPath: data, isDirectory: true)
        .appendingPathComponent("app-groups").appendingPathComponent(identifier)
    }
    guard let home = environment["HOME"], home.hasPrefix("/") else {
      throw AppGroupMailboxError.containerUnavailable(
        .init(
          operation: "find container root", systemCall: "",
          errno: Errno.noSuchFileOrDirectory.rawValue))
    }
    return URL(fileURLWithPath: home, isDirectory: true)
      .appendingPathComponent(".local/share/app-groups").appendingPathComponent(identifier)
  }

  /// Whether `identifier` is a valid app group identifier (see ``url(forIdentifier:environment:)``).
  public static func isValid(_ identifier: String) -> Bool {
    let bytes = Array(identifier.utf8)
    guard (1...255).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
    return identifier.unicodeScalars.allSatisfy { scalar in
      scalar.isASCII
        && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
    }
  }
}
