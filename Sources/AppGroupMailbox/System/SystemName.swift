import Glibc

/// A name a system call can take: a `String`, or the exact bytes readdir(3) returned for an entry
/// whose name is not valid UTF-8 (a `String` would repair those bytes and then name nothing).
protocol SystemName {
  /// Calls `body` with the name as a NUL-terminated C string.
  func withSystemName<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R
}

extension String: SystemName {
  func withSystemName<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
    try withCString(body)
  }
}

/// The name of a directory entry exactly as the file system holds it.
enum EntryName: SystemName, Sendable, Hashable {
  /// A valid UTF-8 name (every name the mailbox itself creates).
  case text(String)
  /// Bytes that are not valid UTF-8, NUL-terminated.
  case bytes([CChar])

  /// The name's bytes, without a terminating NUL.
  var bytes: [UInt8] {
    switch self {
    case .text(let text): Array(text.utf8)
    case .bytes(let bytes): bytes.dropLast().map { UInt8(bitPattern: $0) }
    }
  }

  func withSystemName<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
    switch self {
    case .text(let text): try text.withCString(body)
    case .bytes(let bytes): try bytes.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }
  }
}
