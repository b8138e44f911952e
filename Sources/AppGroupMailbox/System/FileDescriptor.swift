import Glibc
import MailboxLocks
import Synchronization

/// What a path is to the mailbox: the part of an error that says where a call failed without
/// naming a file (a path can hold a message id; contents never appear). See docs/FORMAT.md for
/// the layout.
enum PathRole: String, Sendable, CaseIterable {
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

extension PathRole {
  /// The name of the namespace directory's entry with this role (docs/FORMAT.md, "Layout"); nil
  /// for a role that is not one fixed entry of it.
  var entryName: String? {
    switch self {
    case .tmpArea, .pendingArea, .claimedArea, .quarantineArea, .delayedArea:
      SpoolArea.allCases.first { $0.role == self }?.name
    case .keysArea: Spool.keysArea
    case .stateFile: SpoolDirectories.stateName
    case .settingsFile: Spool.settingsName
    case .container, .mailboxesDirectory, .namespaceDirectory, .messageFile, .keyFile,
      .quarantinedDirectory, .notificationDirectory, .legacyLock:
      nil
    }
  }
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
    Self.register(rawValue, role)
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
  /// Numbers below ``RoleTable/size`` (all of them in a process within the usual limit of
  /// open files) take one atomic byte each, with no lock and no hashing: a claim opens and
  /// closes a message file, and a locked dictionary cost about 750 instructions of it
  /// (docs/PERFORMANCE.md). Larger numbers go to the dictionary.
  private static let table = RoleTable()
  private static let roles = Locked<[Int32: PathRole]>([:])

  private static func register(_ fd: Int32, _ role: PathRole?) {
    if fd >= 0, fd < RoleTable.size {
      table.store(role, at: Int(fd))
    } else {
      roles.withLock { $0[fd] = role }
    }
  }

  private static func forget(_ fd: Int32) { register(fd, nil) }

  /// The role of `fd` if a ``FileDescriptor`` owns it (nil for `AT_FDCWD` and borrowed numbers).
  static func role(of fd: Int32) -> PathRole? {
    guard fd >= 0 else { return nil }
    return fd < RoleTable.size ? table.load(at: Int(fd)) : roles.withLock { $0[fd] }
  }
}

/// One atomic byte per descriptor number below ``size``: 0 for none, else the index of its
/// ``PathRole`` in `allCases` plus one. Relaxed ordering: a descriptor is registered and
/// looked up by the thread that uses it; another thread's view only names an error's role.
/// Thread-safe; allocated once for the process and never freed.
private final class RoleTable: Sendable {
  /// How many descriptor numbers the table covers (4 KiB of memory).
  static let size = 4096
  /// Every role once, in the order of their codes.
  private static let roles = PathRole.allCases
  nonisolated(unsafe) private let bytes: UnsafeMutablePointer<Atomic<UInt8>>

  init() {
    bytes = UnsafeMutablePointer<Atomic<UInt8>>.allocate(capacity: Self.size)
    for index in 0..<Self.size { (bytes + index).initialize(to: Atomic(0)) }
  }

  func store(_ role: PathRole?, at index: Int) {
    let code = role.flatMap { Self.roles.firstIndex(of: $0) }.map { UInt8($0 + 1) } ?? 0
    bytes[index].store(code, ordering: .relaxed)
  }

  func load(at index: Int) -> PathRole? {
    let code = Int(bytes[index].load(ordering: .relaxed))
    return code == 0 ? nil : Self.roles[code - 1]
  }
}
