import Glibc

/// One entry of a directory listing: its name and the type readdir(3) reported (`DT_UNKNOWN` on
/// filesystems that do not fill `d_type`; callers must still check the opened descriptor).
struct DirectoryEntry: Sendable {
  var name: String
  var type: UInt8
}

extension Syscall {
  /// Lists `directory` (a descriptor of an open directory) without `.` and `..`.
  ///
  /// Opens a fresh descriptor for `.` each call, so concurrent listings never share a position.
  /// An entry renamed during the listing may be missed or seen twice (readdir(3)); callers treat a
  /// listing as a hint. - Complexity: O(n) in the number of entries.
  static func list(_ directory: Int32) throws -> [DirectoryEntry] {
    let fd = try open(directory, ".", O_RDONLY | O_DIRECTORY)
    guard let stream = fdopendir(fd) else {
      let code = errno
      close(fd)
      throw SystemCallError(call: "fdopendir", errno: code)
    }
    defer { closedir(stream) }
    var entries: [DirectoryEntry] = []
    while true {
      errno = 0
      guard let entry = readdir(stream) else {
        if errno != 0 { throw SystemCallError(call: "readdir", errno: errno) }
        break
      }
      let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
        pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
      }
      if name == "." || name == ".." { continue }
      entries.append(DirectoryEntry(name: name, type: entry.pointee.d_type))
    }
    return entries
  }
}
