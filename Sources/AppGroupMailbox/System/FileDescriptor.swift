import Glibc
import MailboxLocks

/// What a path is to the mailbox: the part of an error that says where a call failed without
/// naming a file (a path can hold a message id; contents never appear). See docs/FORMAT.md for
/// the layout.
enum PathRole: String, Sendable {
  case container = "container"
  case mailboxesDirectory = "mailboxes directory"
  case namespaceDirectory = "namespace directory"
  case tmpArea = "tmp area"
  case pendingArea = "pending area"
  case claimedArea = "claimed area"
  case quarantineArea = "quarantine area"
  case delayedArea = "delayed area"
  case keysArea = "keys area"
  case stateFile = "state file"
  case settingsFile = "settings file"
  case messageFile = "message file"
  case keyFile = "key file"
  case quarantinedDirectory = "quarantined directory"
  case notificationDirectory = "notification directory"
  case legacyLock = "legacy lock file"
}

/// An open file descriptor that this value owns and closes exactly once.
///
/// A `~Copyable` struct rather than a class: the compiler guarantees a single owner, so the
/// descriptor is closed once, when the owner ends (its `deinit`, on every path, thrown errors
/// included) or when ``close()`` or ``take()`` consumes it; it can never be closed twice or used
/// after closing, and it costs no allocation or reference count. A type that keeps descriptors
/// (``SpoolDirectories``) stores them as properties and lends their ``rawValue`` to system calls.
///
/// While open, the descriptor's ``PathRole`` is registered, so a ``SystemCallError`` from a call
/// on it, or on an entry inside it (`openat`, `renameat2`, `unlinkat`...), names the role.
struct FileDescriptor: ~Copyable, Sendable {
  /// The descriptor number; valid while this value lives.
  let rawValue: Int32
  /// What the descriptor is to the mailbox.
  let role: PathRole

  /// Takes ownership of the open descriptor `rawValue`.
  init(adopting rawValue: Int32, role: PathRole) {
    self.rawValue = rawValue
    self.role = role
    Self.roles.withLock { $0[rawValue] = role }
  }

  /// openat(2) of `name` in `directory` (always with `O_CLOEXEC`), owned by the result.
  /// - Throws: ``SystemCallError`` from openat(2), naming `role`, the role of what it opens.
  static func open(
    _ directory: Int32, _ name: some SystemName, _ flags: Int32, mode: mode_t = 0,
    role: PathRole
  ) throws -> FileDescriptor {
    do {
      return FileDescriptor(
        adopting: try Syscall.open(directory, name, flags, mode: mode), role: role)
    } catch var error as SystemCallError {
      error.role = role
      error.targetRole = nil
      throw error
    }
  }

  /// Closes the descriptor now (close(2), never retried; its result says nothing useful here).
  consuming func close() {
    Self.forget(rawValue)
    Syscall.close(rawValue)
    discard self
  }

  /// Ends this value without closing: the caller owns the returned descriptor (for a type that
  /// hands it to an API that closes it, such as fdopendir(3)).
  consuming func take() -> Int32 {
    let fd = rawValue
    Self.forget(fd)
    discard self
    return fd
  }

  /// fstat(2) of the descriptor.
  func status() throws -> stat { try Syscall.fstat(rawValue) }

  deinit {
    Self.forget(rawValue)
    Syscall.close(rawValue)
  }

  /// The role of every descriptor a ``FileDescriptor`` owns now, by number. A number is
  /// registered only while its owner keeps it open, so it cannot name a reused descriptor.
  private static let roles = Locked<[Int32: PathRole]>([:])

  private static func forget(_ fd: Int32) { _ = roles.withLock { $0.removeValue(forKey: fd) } }

  /// The role of `fd` if a ``FileDescriptor`` owns it (nil for `AT_FDCWD` and borrowed numbers).
  static func role(of fd: Int32) -> PathRole? {
    fd < 0 ? nil : roles.withLock { $0[fd] }
  }
}
