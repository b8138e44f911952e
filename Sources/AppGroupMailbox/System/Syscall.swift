import CMailboxShims
import Glibc

/// Thin wrappers over the system calls the spool uses. Each retries `EINTR` (never for `close`),
/// consults ``FaultInjection`` and
/// reports to ``SystemCallRecording`` in debug builds, and throws ``SystemCallError`` naming the
/// call, its ``Errno`` and the role of the descriptor it was made on (``FileDescriptor``).
///
/// The descriptors they take are borrowed: a ``FileDescriptor`` owns each and lends its
/// ``FileDescriptor/rawValue``.
enum Syscall {
  @inline(__always)
  private static func check(_ call: String, at fd: Int32) throws {
    CrashPoint.check(call)
    #if DEBUG  // the role lookup takes a lock: release builds never consult the hook
      if let injected = FaultInjection.check(call, role: FileDescriptor.role(of: fd)) {
        throw SystemCallError(
          call: call, errno: Errno(rawValue: injected), role: FileDescriptor.role(of: fd))
      }
    #endif
  }

  /// Runs `body` until it stops failing with EINTR; a negative result throws with errno and the
  /// role of `fd`, the descriptor the call is made on (or in).
  @inline(__always)
  static func retrying<R: BinaryInteger>(_ call: String, at fd: Int32, _ body: () -> R) throws
    -> R
  {
    try check(call, at: fd)
    while true {
      let result = body()
      if result >= 0 { return result }
      let error = SystemCallError.current(call, at: fd)
      if error.errno != .interrupted { throw error }
    }
  }

  /// openat(2). `flags` always gain `O_CLOEXEC`.
  static func open(
    _ directory: Int32, _ name: some SystemName, _ flags: Int32, mode: mode_t = 0
  ) throws -> Int32 {
    try name.withSystemName { path in
      try SystemCallRecording.observe(
        .init(name: "openat", descriptor: directory, path: String(cString: path), flags: flags)
      ) {
        try retrying("openat", at: directory) { openat(directory, path, flags | O_CLOEXEC, mode) }
      }
    }
  }

  /// close(2); never retried (see close(2), NOTES: retrying after EINTR may close another file).
  static func close(_ fd: Int32) { _ = Glibc.close(fd) }

  /// Writes all of `bytes` at the current offset (write(2) until done).
  static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
      let written = try SystemCallRecording.observe(.init(name: "write", descriptor: fd)) {
        try retrying("write", at: fd) {
          Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        }
      }
      offset += written
    }
  }

  /// Writes all of `bytes` at `position` (pwrite(2) until done).
  static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at position: Int) throws {
    var offset = 0
    while offset < bytes.count {
      let written = try SystemCallRecording.observe(.init(name: "pwrite", descriptor: fd)) {
        try retrying("pwrite", at: fd) {
          Glibc.pwrite(
            fd, bytes.baseAddress! + offset, bytes.count - offset, off_t(position + offset))
        }
      }
      offset += written
    }
  }

  /// Reads up to `limit` bytes from `position` with pread(2); fewer at end of file.
  static func pread(_ fd: Int32, limit: Int, at position: Int = 0) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: limit)
    var total = 0
    try buffer.withUnsafeMutableBytes { raw in
      while total < limit {
        let got = try retrying("pread", at: fd) {
          Glibc.pread(fd, raw.baseAddress! + total, limit - total, off_t(position + total))
        }
        if got == 0 { break }
        total += got
      }
    }
    buffer.removeSubrange(total...)
    return buffer
  }

  /// fsync(2) (also valid on a directory opened read-only).
  static func fsync(_ fd: Int32) throws {
    _ = try SystemCallRecording.observe(.init(name: "fsync", descriptor: fd)) {
      try retrying("fsync", at: fd) { Glibc.fsync(fd) }
    }
  }

  /// ftruncate(2).
  static func truncate(_ fd: Int32, _ length: Int) throws {
    _ = try SystemCallRecording.observe(.init(name: "ftruncate", descriptor: fd)) {
      try retrying("ftruncate", at: fd) { Glibc.ftruncate(fd, off_t(length)) }
    }
  }

  /// fstat(2).
  static func fstat(_ fd: Int32) throws -> stat {
    var info = stat()
    _ = try retrying("fstat", at: fd) { Glibc.fstat(fd, &info) }
    return info
  }

  /// fstatat(2) with `AT_SYMLINK_NOFOLLOW`: describes the entry itself, never a link's target.
  static func lstat(_ directory: Int32, _ name: some SystemName) throws -> stat {
    var info = stat()
    _ = try name.withSystemName { path in
      try retrying("fstatat", at: directory) {
        fstatat(directory, path, &info, AT_SYMLINK_NOFOLLOW)
      }
    }
    return info
  }

  /// The bits of `STATX_ATTR_IMMUTABLE`, `STATX_ATTR_APPEND` and `STATX_ATTR_MOUNT_ROOT` that
  /// the entry `name` of `directory` carries (statx(2) with `AT_SYMLINK_NOFOLLOW`, the entry
  /// itself, never a link's target; only bits the kernel reports in `stx_attributes_mask`):
  /// nonzero when its own inode flags (chattr(1) `+i`, `+a`) or a mount on it (`mount --bind`
  /// onto the file: EBUSY, rename(2), unlink(2)) refuse every rename, link and unlink of it,
  /// whatever the directories allow. A flag of the directory is not seen here.
  static func moveRefusingAttributes(_ directory: Int32, _ name: some SystemName) throws -> UInt64 {
    let bits = try name.withSystemName { path in
      try retrying("statx", at: directory) {
        cmailbox_move_refusing_attributes(directory, path)
      }
    }
    return UInt64(bits)
  }

  /// renameat(2): replaces an existing destination.
  static func rename(_ from: Int32, _ old: some SystemName, _ to: Int32, _ new: String) throws {
    try twoNameCall("renameat", from, old, to, new) { renameat(from, $0, to, new) }
  }

  /// renameat2(2) with `RENAME_NOREPLACE`: fails with EEXIST rather than replace the destination.
  /// Where the filesystem lacks the flag (EINVAL, ENOSYS) it falls back to linkat(2) then
  /// unlinkat(2), which shows two links for an instant (see docs/FORMAT.md, "Claim"); a source
  /// already gone when the fallback unlinks it (another process finished the same move) counts as
  /// moved; when the unlink fails otherwise, the new link is removed again while the source is
  /// still there, so an error means "not moved". With `linkFallback` false it falls back to renameat(2) instead, which is atomic but
  /// replaces: only for a destination that carries a fresh random token (a claim, a renewal).
  /// Spool code moves entries through ``Spool/move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)``.
  static func renameNoReplace(
    _ from: Int32, _ old: some SystemName, _ to: Int32, _ new: String, linkFallback: Bool = true
  ) throws {
    do {
      try twoNameCall("renameat2", from, old, to, new) {
        cmailbox_rename_noreplace(from, $0, to, new)
      }
    } catch let error as SystemCallError
      where error.errno == .invalidArgument || error.errno == .noFunction
    {
      guard linkFallback else { return try rename(from, old, to, new) }
      try link(from, old, to, new)
      do {
        try unlink(from, old)
      } catch let error as SystemCallError where error.isNotFound {
        return
      } catch {
        // The entry has both names. While the old one is still there, take the new one back,
        // so an error means "not moved" (an enqueue then lowers its counters again and
        // reports the message as not enqueued); with the old one gone, it moved.
        guard (try? lstat(from, old)) != nil else { return }
        try? unlink(to, new)
        throw error
      }
    }
  }

  /// renameat2(2) with `RENAME_EXCHANGE`: swaps two existing entries atomically (ENOENT when
  /// either is missing; EINVAL or ENOSYS where the filesystem lacks the flag). Only for a keyed
  /// replacement (``Spool/replacePending(_:with:_:diagnostics:)``).
  static func renameExchange(_ from: Int32, _ old: String, _ to: Int32, _ new: String) throws {
    _ = try SystemCallRecording.observe(
      .init(
        name: "renameat2", descriptor: from, path: old, targetDescriptor: to, targetPath: new)
    ) {
      try retrying("renameat2", at: from) { cmailbox_rename_exchange(from, old, to, new) }
    }
  }

  /// linkat(2) without following a symlink source: a second name for the same inode.
  static func link(_ from: Int32, _ old: some SystemName, _ to: Int32, _ new: String) throws {
    try twoNameCall("linkat", from, old, to, new) { linkat(from, $0, to, new, 0) }
  }

  /// The system call `name` from `old` in directory `from` to `new` in directory `to`, made by
  /// `call` with `old`'s path: recorded, and retried after EINTR like every call here.
  private static func twoNameCall(
    _ name: String, _ from: Int32, _ old: some SystemName, _ to: Int32, _ new: String,
    _ call: (UnsafePointer<CChar>) -> Int32
  ) throws {
    _ = try old.withSystemName { path in
      try SystemCallRecording.observe(
        .init(
          name: name, descriptor: from, path: String(cString: path), targetDescriptor: to,
          targetPath: new)
      ) {
        do {
          return try retrying(name, at: from) { call(path) }
        } catch var error as SystemCallError {
          error.targetRole = FileDescriptor.role(of: to)
          throw error
        }
      }
    }
  }

  /// unlinkat(2) of a non-directory entry.
  static func unlink(_ directory: Int32, _ name: some SystemName) throws {
    _ = try name.withSystemName { path in
      try SystemCallRecording.observe(
        .init(name: "unlinkat", descriptor: directory, path: String(cString: path))
      ) {
        try retrying("unlinkat", at: directory) { unlinkat(directory, path, 0) }
      }
    }
  }

  /// unlinkat(2) with `AT_REMOVEDIR` (the directory must be empty).
  static func removeDirectory(_ directory: Int32, _ name: some SystemName) throws {
    _ = try name.withSystemName { path in
      try SystemCallRecording.observe(
        .init(
          name: "unlinkat", descriptor: directory, path: String(cString: path),
          flags: AT_REMOVEDIR)
      ) {
        try retrying("unlinkat", at: directory) { unlinkat(directory, path, AT_REMOVEDIR) }
      }
    }
  }

  /// mkdirat(2).
  static func makeDirectory(_ directory: Int32, _ name: String, mode: mode_t) throws {
    _ = try SystemCallRecording.observe(
      .init(name: "mkdirat", descriptor: directory, path: name)
    ) {
      try retrying("mkdirat", at: directory) { mkdirat(directory, name, mode) }
    }
  }

  /// fchmod(2): sets exact permission bits, whatever the umask did.
  static func chmod(_ fd: Int32, _ mode: mode_t) throws {
    _ = try retrying("fchmod", at: fd) { fchmod(fd, mode) }
  }

  /// fchmodat(2) of `name` relative to `directory` (`AT_FDCWD`: a path), following a symbolic
  /// link as chmod(2) does: sets exact permission bits, whatever the umask did.
  static func chmod(_ directory: Int32, _ name: String, _ mode: mode_t) throws {
    _ = try retrying("fchmodat", at: directory) { fchmodat(directory, name, mode, 0) }
  }

  /// fchown(2): gives the open file `fd` to `uid` and `gid`.
  static func chown(_ fd: Int32, _ uid: uid_t, _ gid: gid_t) throws {
    _ = try retrying("fchown", at: fd) { fchown(fd, uid, gid) }
  }

  /// flock(2) with `operation` (`LOCK_EX`, `LOCK_UN`). A wait a signal interrupts goes on; a
  /// ``LockWait`` check, when set, decides before and during each wait whether to block, poll
  /// or give up (`EINTR`): a lock that is free is taken whatever it says.
  static func lock(_ fd: Int32, _ operation: Int32) throws {
    _ = try SystemCallRecording.observe(.init(name: "flock", descriptor: fd, flags: operation)) {
      try check("flock", at: fd)
      // Unlocking never waits; a caller asking not to wait (LOCK_NB) gets its answer at once.
      let decide = operation & (LOCK_UN | LOCK_NB) == 0 ? LockWait.current : nil
      while true {
        let verdict = decide?() ?? .wait
        if verdict == .wait {
          if cmailbox_flock(fd, operation) == 0 { return 0 }
          let error = SystemCallError.current("flock", at: fd)
          guard error.errno == .interrupted else { throw error }
          continue
        }
        // Polling, or giving up: a free lock is still taken; only a held one is given up.
        if cmailbox_flock(fd, operation | LOCK_NB) == 0 { return 0 }
        let error = SystemCallError.current("flock", at: fd)
        guard error.errno == .wouldBlock || error.errno == .interrupted else { throw error }
        if verdict == .giveUp {
          throw SystemCallError(
            call: "flock", errno: .interrupted, role: FileDescriptor.role(of: fd))
        }
        usleep(10_000)
      }
    }
  }
}
