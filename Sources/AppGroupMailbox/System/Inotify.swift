import Glibc

/// One event read from an inotify descriptor (inotify(7)): the watch it belongs to (`-1` for
/// `IN_Q_OVERFLOW`), its mask bits, its rename cookie, and the entry name for events about a
/// directory's children (nil for events about the watched directory itself).
struct InotifyEvent: Equatable, Sendable {
  var watch: Int32
  var mask: UInt32
  var cookie: UInt32
  var name: String?

  /// Whether any of `bits` (an `IN_*` constant) is set.
  func has(_ bits: Int32) -> Bool { mask & UInt32(bitPattern: bits) != 0 }
}

/// The inotify mask bits the watchers use, as `UInt32` (the C constants import as `Int32`).
enum InotifyMask {
  static func bits(_ values: Int32...) -> UInt32 {
    values.reduce(0) { $0 | UInt32(bitPattern: $1) }
  }
  /// An entry appeared by rename (`IN_MOVED_TO`) or by creation or linkat(2) (`IN_CREATE`).
  static let arrivals = bits(IN_MOVED_TO, IN_CREATE)
  /// An entry left by deletion (`IN_DELETE`) or rename (`IN_MOVED_FROM`).
  static let departures = bits(IN_DELETE, IN_MOVED_FROM)
  /// The watched directory itself was deleted or moved (`IN_DELETE_SELF`, `IN_MOVE_SELF`).
  static let selfGone = bits(IN_DELETE_SELF, IN_MOVE_SELF)
  /// An entry of the watched directory left or was replaced (`IN_DELETE`, `IN_MOVED_FROM`,
  /// `IN_MOVED_TO`): how a namespace watch sees its `pending/` area go.
  static let areaChanges = bits(IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO)
  /// Events meaning the watch no longer observes the directory it was added for.
  static let watchLost = bits(IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_IGNORED)
  /// Only directories; no events for children already unlinked (inotify(7)).
  static let options = bits(IN_ONLYDIR, IN_EXCL_UNLINK)
}

/// Splits the bytes returned by read(2) on an inotify descriptor into events.
///
/// Each record is a `struct inotify_event` header (16 bytes: `wd`, `mask`, `cookie`, `len`)
/// followed by `len` bytes of NUL-padded name (inotify(7)). Headers are loaded with
/// `loadUnaligned` and a truncated trailing record is ignored.
/// - Complexity: O(n) in the buffer length.
enum InotifyEventParser {
  static let headerSize = MemoryLayout<inotify_event>.size

  static func parse(_ bytes: UnsafeRawBufferPointer) -> [InotifyEvent] {
    var events: [InotifyEvent] = []
    var records = InotifyRecords(bytes)
    while let record = records.next() { events.append(record.event) }
    return events
  }
}

/// The records of one read(2) of an inotify descriptor, without copying: each record's name is
/// a view of the read buffer, cut at its first NUL (see ``InotifyEventParser``).
struct InotifyRecords: IteratorProtocol {
  struct Record {
    var watch: Int32
    var mask: UInt32
    var cookie: UInt32
    /// The entry name's bytes (empty for an event about the watched directory itself).
    var name: UnsafeRawBufferPointer

    var event: InotifyEvent {
      InotifyEvent(
        watch: watch, mask: mask, cookie: cookie,
        name: name.isEmpty ? nil : String(decoding: name, as: UTF8.self))
    }
  }

  private let bytes: UnsafeRawBufferPointer
  private var offset = 0

  init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  mutating func next() -> Record? {
    let headerSize = InotifyEventParser.headerSize
    guard offset + headerSize <= bytes.count else { return nil }
    let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
    let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
    let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
    let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
    let nameStart = offset + headerSize
    guard nameStart + length <= bytes.count else { return nil }
    let raw = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<(nameStart + length)])
    let end = raw.firstIndex(of: 0) ?? raw.count
    offset = nameStart + length
    return Record(
      watch: watch, mask: mask, cookie: cookie, name: UnsafeRawBufferPointer(rebasing: raw[..<end]))
  }
}

extension Syscall {
  /// inotify_init1(2) with `IN_NONBLOCK | IN_CLOEXEC`. Fails with `EMFILE` past
  /// `fs.inotify.max_user_instances` or the process descriptor limit.
  static func inotifyInit() throws -> Int32 {
    try retrying("inotify_init1", at: -1) { inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)) }
  }

  /// inotify_add_watch(2): returns the watch descriptor (the same one again for an inode this
  /// instance already watches, whose mask is then replaced). Fails with `ENOSPC` past
  /// `fs.inotify.max_user_watches`.
  static func inotifyAddWatch(_ fd: Int32, _ path: String, _ mask: UInt32) throws -> Int32 {
    try retrying("inotify_add_watch", at: -1) { inotify_add_watch(fd, path, mask) }
  }

  /// inotify_rm_watch(2); a watch the kernel already dropped (`EINVAL`) is not an error.
  static func inotifyRemoveWatch(_ fd: Int32, _ watch: Int32) {
    _ = inotify_rm_watch(fd, watch)
  }

  /// The path under which `/proc` names the open directory `fd`; adding a watch on it watches
  /// exactly the directory this process holds, whatever its path now names (proc(5)).
  static func procPath(_ fd: Int32) -> String { "/proc/self/fd/\(fd)" }
}
