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

  func withSystemName<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
    switch self {
    case .text(let text): try text.withCString(body)
    case .bytes(let bytes): try bytes.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }
  }
}

extension Syscall {
  /// Reads a whole file from offset 0, but never more than `limit + 1` bytes, so a caller can
  /// tell "at most `limit`" from "larger" without reading a large or growing file whole.
  ///
  /// `expected` (the size fstat(2) reported) sizes the first buffer; the buffer grows only while
  /// the file keeps delivering bytes, and never past `limit + 1`. Memory used is therefore
  /// O(min(actual size, limit)), whatever the file's size. A file of the size fstat(2) reported
  /// takes one pread(2): a read that returns exactly `expected` bytes, one short of the buffer,
  /// is at the end of the file.
  static func readCapped(_ fd: Int32, expected: Int, limit: Int) throws -> [UInt8] {
    let cap = limit + 1
    // The first buffer is left uninitialized (its bytes come from the file, and only those
    // read are kept): no pass to zero what pread(2) then overwrites.
    var atEnd = false
    var buffer = try [UInt8](unsafeUninitializedCapacity: min(max(expected, 0), limit) + 1) {
      raw, count in
      count = 0
      while count < raw.count {
        let got = try retrying("pread", at: fd) {
          Glibc.pread(fd, raw.baseAddress! + count, raw.count - count, off_t(count))
        }
        if got == 0 {
          atEnd = true
          return
        }
        count += got
        // The size fstat(2) gave, read whole and short of the spare byte: at the end of the
        // file (a regular file reads short only there), so no second call to see 0.
        if count == expected, count < raw.count {
          atEnd = true
          return
        }
      }
    }
    var total = buffer.count
    while !atEnd, total < cap {  // the file grew since fstat(2): read on, never past the cap
      if total == buffer.count {
        buffer.append(contentsOf: repeatElement(0, count: min(buffer.count, cap - buffer.count)))
      }
      let got = try buffer.withUnsafeMutableBytes { raw in
        try retrying("pread", at: fd) {
          Glibc.pread(fd, raw.baseAddress! + total, raw.count - total, off_t(total))
        }
      }
      if got == 0 { break }
      total += got
    }
    buffer.removeSubrange(total...)
    return buffer
  }
}
