import Glibc

/// One entry of a directory listing: its name and the type readdir(3) reported (`DT_UNKNOWN` on
/// filesystems that do not fill `d_type`; callers must still check the opened descriptor).
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

  /// Whether readdir reported a type other than a regular file (`DT_UNKNOWN` counts as maybe
  /// regular: the caller must look).
  var isKnownNotRegular: Bool { type != UInt8(DT_REG) && type != UInt8(DT_UNKNOWN) }
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
      let error = SystemCallError.current("fdopendir", at: directory)
      close(fd)
      throw error
    }
    defer { closedir(stream) }
    var entries: [DirectoryEntry] = []
    while true {
      errno = 0
      guard let entry = readdir(stream) else {
        if errno != 0 { throw SystemCallError.current("readdir", at: directory) }
        break
      }
      let (name, exact) = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
        pointer.withMemoryRebound(to: CChar.self, capacity: 256) { cName -> (String, EntryName?) in
          if let text = String(validatingCString: cName) { return (text, nil) }
          let length = strlen(cName)
          return (
            String(cString: cName),
            .bytes(Array(UnsafeBufferPointer(start: cName, count: length + 1)))
          )
        }
      }
      if name == "." || name == ".." { continue }
      entries.append(DirectoryEntry(name: name, type: entry.pointee.d_type, exactName: exact))
    }
    return entries
  }
}
