import CMailboxShims
import Glibc

/// One entry of a directory listing: its name and the type getdents64(2) reported (`DT_UNKNOWN`
/// on filesystems that do not fill `d_type`; callers must still check the opened descriptor).
struct DirectoryEntry: Sendable {
  /// The name; for a name that is not valid UTF-8, a repaired copy (see ``exactName``).
  var name: String
  var type: UInt8
  /// The name to hand to system calls: differs from ``name`` only for invalid UTF-8.
  var exactName: EntryName

  init(name: String, type: UInt8, exactName: EntryName? = nil) {
    self.name = name
    self.type = type
    self.exactName = exactName ?? .text(name)
  }

  /// An entry for a name's exact bytes (without its terminating NUL), as a listing reports it.
  init(bytes: UnsafeBufferPointer<UInt8>, type: UInt8) {
    if let text = String(validating: bytes, as: UTF8.self) {
      self.init(name: text, type: type)
    } else {
      self.init(
        name: String(decoding: bytes, as: UTF8.self), type: type,
        exactName: .bytes(bytes.map { CChar(bitPattern: $0) } + [0]))
    }
  }

  /// Whether the listing reported a type other than a regular file (`DT_UNKNOWN` counts as maybe
  /// regular: the caller must look).
  var isKnownNotRegular: Bool { Self.isKnownNotRegular(type) }

  /// ``isKnownNotRegular`` for a `d_type` from ``Syscall/forEachEntry(_:_:)``.
  static func isKnownNotRegular(_ type: UInt8) -> Bool {
    type != UInt8(DT_REG) && type != UInt8(DT_UNKNOWN)
  }
}

extension Syscall {
  /// Bytes of the first getdents64(2) read of a listing: most directories of a spool hold a
  /// few entries, and this much comes from the allocator's arena without a system call.
  /// (readdir(3) reads 32 KiB at a time too.)
  static let firstListingRead = 32 * 1024
  /// Bytes of each later read: a directory of 100,000 message names (104 bytes a record) takes
  /// about 40 reads instead of readdir(3)'s 320.
  static let listingRead = 256 * 1024

  /// Lists `directory` (a descriptor of an open directory) without `.` and `..`.
  ///
  /// Opens a fresh descriptor for `.` each call, so concurrent listings never share a position.
  /// An entry renamed during the listing may be missed or seen twice (getdents64(2), as
  /// readdir(3)); callers treat a listing as a hint. - Complexity: O(n) in the number of
  /// entries.
  static func list(_ directory: Int32) throws -> [DirectoryEntry] {
    var entries: [DirectoryEntry] = []
    try forEachEntry(directory) { name, type in
      entries.append(DirectoryEntry(bytes: name, type: type))
    }
    return entries
  }

  /// Whether an entry of `directory` other than `.` and `..` satisfies `predicate` (handed its
  /// name's bytes, valid only during the call, and its `d_type`): stops reading at the first,
  /// so a directory at depth is neither read whole nor held. Same guarantees as ``list(_:)``.
  /// - Complexity: O(n) in the entries before the first match.
  static func containsEntry(
    _ directory: Int32, where predicate: (UnsafeBufferPointer<UInt8>, UInt8) -> Bool
  ) throws -> Bool {
    struct Found: Error {}
    do {
      try forEachEntry(directory) { name, type in
        if predicate(name, type) { throw Found() }
      }
    } catch is Found {
      return true
    }
    return false
  }

  /// Hands each entry of `directory` except `.` and `..` to `body`: its name's exact bytes
  /// (without the NUL; valid only during the call) and its `d_type`. Nothing is allocated per
  /// entry: the names are read with large getdents64(2) calls (``firstListingRead``, then
  /// ``listingRead`` bytes) straight into one buffer, which is what makes a first claim at
  /// depth cheap. Same guarantees as ``list(_:)``. - Complexity: O(n) in the number of entries.
  static func forEachEntry(
    _ directory: Int32, _ body: (UnsafeBufferPointer<UInt8>, UInt8) throws -> Void
  ) throws {
    let fd = try open(directory, ".", O_RDONLY | O_DIRECTORY)
    defer { close(fd) }
    var capacity = firstListingRead
    var buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    defer { buffer.deallocate() }
    while true {
      let got = try retrying("getdents64", at: directory) {
        cmailbox_getdents64(fd, buffer, UInt(capacity))
      }
      if got == 0 { return }
      var offset = 0
      while offset + 19 < got {
        // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
        let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 16, as: UInt16.self))
        guard length > 19, offset + length <= got else { break }
        let type = buffer.load(fromByteOffset: offset + 18, as: UInt8.self)
        let start = (buffer + offset + 19).assumingMemoryBound(to: UInt8.self)
        let name = UnsafeBufferPointer(start: start, count: strnlen(start, length - 19))
        offset += length
        if name.count <= 2, name.allSatisfy({ $0 == UInt8(ascii: ".") }), !name.isEmpty {
          continue
        }
        try body(name, type)
      }
      // A first read that came back more than half full was a large directory.
      if capacity < listingRead, got > capacity / 2 {
        buffer.deallocate()
        capacity = listingRead
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
      }
    }
  }
}
