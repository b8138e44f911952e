import Glibc

/// What tells one file from another under the same name: its inode, size and modification time
/// (stat(2)). A rename keeps all three (a claim, a put-back, a release or recovery by any
/// process); a new file has its own: a keyed replacement's file exists before the exchange that
/// puts it under the name, so its inode differs from the one it replaces, and one written after
/// the file it replaces was read has a later modification time where a filesystem reuses a freed
/// inode number at once (ext4), unless both fall in one tick of the filesystem's clock. The
/// change time is left out on purpose: every rename updates it, so consumers of two types passing
/// over one message would make each other read it again (``PassedOverMarks``).
struct FileIdentity: Hashable, Sendable {
  var inode: UInt64
  var size: Int64
  /// Nanoseconds since the epoch.
  var modified: Int64

  init(_ info: stat) {
    inode = UInt64(info.st_ino)
    size = Int64(info.st_size)
    modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
  }
}

/// What says a file has not changed since it was looked at, without reading it again: its
/// ``FileIdentity`` and its change time (a rewrite in place, a chmod, a link or a rename changes
/// the size or one of the times). Used for a checked pending file (eviction), the settings
/// file (re-read only when it changed) and a notification file (polling).
struct FileStamp: Hashable, Sendable {
  var identity: FileIdentity
  /// Nanoseconds since the epoch.
  var changed: Int64

  init(_ info: stat) {
    identity = FileIdentity(info)
    changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
  }
}
