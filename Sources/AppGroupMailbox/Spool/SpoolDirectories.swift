import CMailboxShims
import Foundation
import Glibc

/// The open directories of one namespace: `<container>/AppGroupMailbox/<namespace>/` with its
/// areas `tmp/`, `pending/`, `claimed/`, `quarantine/` and `delayed/`, and its `state` file. See
/// docs/FORMAT.md.
///
/// Every directory below the container is opened with `O_NOFOLLOW | O_DIRECTORY`, so a symlink
/// in its place makes opening fail rather than lead outside; all must be on the container's
/// filesystem (renames cannot cross filesystems: rename(2), EXDEV).
final class SpoolDirectories: Sendable {
  static let root = "AppGroupMailbox"
  /// The names of the areas, in ``SpoolArea`` order.
  static let areas = SpoolArea.allCases.map(\.name)
  /// The name of the `state` file in the namespace directory.
  static let stateName = "state"

  // The owned descriptors, each closed exactly once when this object ends; the properties below
  // lend their numbers to system calls for the spool's lifetime.
  private let namespaceFile: FileDescriptor
  private let tmpFile: FileDescriptor
  private let pendingFile: FileDescriptor
  private let claimedFile: FileDescriptor
  private let quarantineFile: FileDescriptor
  private let delayedFile: FileDescriptor
  private let stateFile: FileDescriptor

  var namespace: Int32 { namespaceFile.rawValue }
  var tmp: Int32 { tmpFile.rawValue }
  var pending: Int32 { pendingFile.rawValue }
  var claimed: Int32 { claimedFile.rawValue }
  var quarantine: Int32 { quarantineFile.rawValue }
  /// Messages not due yet (a not-before time in the future); never claimable from here.
  var delayed: Int32 { delayedFile.rawValue }
  /// The `state` file: the lock every producer takes, and the counters it guards.
  var state: Int32 { stateFile.rawValue }
  let path: String

  /// The open descriptor of `area`.
  func descriptor(of area: SpoolArea) -> Int32 {
    switch area {
    case .tmp: tmp
    case .pending: pending
    case .claimed: claimed
    case .quarantine: quarantine
    case .delayed: delayed
    }
  }

  /// Whether the namespace directory and each of `areas` are still the directories their paths
  /// name: not deleted, moved or replaced, an ancestor's rename (the container's) included. One
  /// fstat(2) and one lstat(2) each.
  func isInPlace(areas: [SpoolArea]) -> Bool {
    isSameDirectory(namespace, at: path)
      && areas.allSatisfy { isSameDirectory(descriptor(of: $0), at: path + "/" + $0.name) }
  }

  /// Whether the namespace directory or one of its areas was deleted since it was opened: a
  /// deleted directory keeps no links (fstat(2) on its descriptor shows `st_nlink` 0). A
  /// recursive removal deletes the areas before the namespace, so each is asked.
  var isRemoved: Bool {
    [namespace, tmp, pending, claimed, quarantine, delayed].contains {
      (try? Syscall.fstat($0))?.st_nlink == 0
    }
  }
  /// Opened for looking only: nothing was created, `state` is read-only.
  let readOnly: Bool
  /// The namespace directory's owner and group when this process runs as root and the
  /// namespace belongs to another user: what root creates inside is given to them
  /// (``adoptOwner(_:)``), so `sudo mailboxctl` never leaves a file its owner cannot read.
  let owner: (uid: uid_t, gid: gid_t)?

  /// Opens the namespace directory, creating what is missing (unless `readOnly`).
  ///
  /// A new namespace directory gets `permissions`; once it is open, `sharing` (given the
  /// namespace descriptor and whether this call created it) names the mode for everything
  /// created below it, so a mailbox's areas follow its stored sharing mode, not the opener's.
  /// Nothing that exists is ever given another mode. With `readOnly`, nothing is created or
  /// opened for writing (`state` is opened read-only), so a read-only file system or a user
  /// who may only read can open it. What was opened before a failure is closed (each
  /// ``FileDescriptor`` ends with the scope).
  ///
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` when a directory is a symlink
  ///   (`ELOOP`) or not a directory (`ENOTDIR`, `EEXIST`), `state` is not a regular file
  ///   (`EINVAL`; `EISDIR`, `ENXIO` from its open), or an area is on another mount or device
  ///   than the namespace directory (`EXDEV`: another filesystem, a bind mount, a btrfs
  ///   subvolume; ``Placement/holds(_:)``), its cause naming the role;
  ///   ``AppGroupMailboxError/ioFailure(_:)`` (operation `"open mailbox"`) naming the system
  ///   call, errno and role of any other failure (EROFS, EACCES, ENAMETOOLONG, ENOENT...).
  init(
    container: URL, namespace name: String, permissions: AppGroupMailboxPermissions,
    readOnly: Bool = false,
    sharing: (Int32, Bool) throws -> AppGroupMailboxPermissions = { _, _ in .private }
  ) throws {
    let containerPath = container.path
    var mode = permissions
    var owner: (uid: uid_t, gid: gid_t)?
    var created = false  // whether the last openDirectory created its directory
    func openDirectory(_ parent: Int32, _ name: String, _ role: PathRole) throws -> FileDescriptor {
      let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
      created = false
      do {
        return try FileDescriptor.open(parent, name, flags, role: role)
      } catch let error as SystemCallError where error.isNotFound && !readOnly {
        // Created below.
      }
      created = true
      do {
        try Syscall.makeDirectory(parent, name, mode: mode.directoryMode)
      } catch let error as SystemCallError where error.errno == .fileExists {
        // Created by a racing process, or a non-directory: the open below decides.
        created = false
      }
      let fd = try FileDescriptor.open(parent, name, flags, role: role)
      // Explicit mode whatever the umask, only on what this call created.
      if created {
        try? Syscall.chmod(fd.rawValue, mode.directoryMode)
        if let owner { try? Syscall.chown(fd.rawValue, owner.uid, owner.gid) }
      }
      return fd
    }
    do {
      if !readOnly, let error = Self.createMissing(containerPath, mode: permissions.directoryMode) {
        throw error
      }
      let containerFD = try FileDescriptor.open(
        AT_FDCWD, containerPath, O_RDONLY | O_DIRECTORY, role: .container)
      // The mailboxes' root directory of a group-shared container (setgid, the README's recipe)
      // is group-shared whatever the first namespace's mode, so later group-shared namespaces
      // stay reachable for the group.
      let requested = mode
      if let info = try? containerFD.status(), info.st_mode & S_ISGID != 0 { mode = .groupShared }
      let root = try openDirectory(containerFD.rawValue, Self.root, .mailboxesDirectory)
      mode = requested
      let namespaceFD = try openDirectory(root.rawValue, name, .namespaceDirectory)
      let createdNamespace = created
      if geteuid() == 0, let info = try? namespaceFD.status(), info.st_uid != 0 {
        owner = (info.st_uid, info.st_gid)
      }
      mode = try sharing(namespaceFD.rawValue, createdNamespace)
      let parent = namespaceFD.rawValue
      func openArea(_ area: SpoolArea) throws -> FileDescriptor {
        try openDirectory(parent, area.name, area.role)
      }
      let tmp = try openArea(.tmp)
      let pending = try openArea(.pending)
      let claimed = try openArea(.claimed)
      let quarantine = try openArea(.quarantine)
      let delayed = try openArea(.delayed)
      let stateFD = try Self.openState(
        parent, readOnly: readOnly, mode: mode.fileMode, owner: owner)
      // Another member's FIFO, directory or hard link in its place is refused: opened without
      // blocking (a FIFO would wait for a writer for ever), never written through to another file.
      let state = try stateFD.status()
      guard state.st_mode & S_IFMT == S_IFREG, state.st_nlink == 1 else {
        throw SystemCallError(call: "", errno: .invalidArgument, role: .stateFile)
      }
      let placement = Placement(namespaceFD.rawValue)
      for fd in [tmp.rawValue, pending.rawValue, claimed.rawValue, quarantine.rawValue]
        + [delayed.rawValue, stateFD.rawValue]
      where !placement.holds(fd) {
        throw SystemCallError(
          call: "", errno: .improperLink, role: FileDescriptor.role(of: fd))
      }
      self.namespaceFile = namespaceFD
      self.namespacePlacement = placement
      self.tmpFile = tmp
      self.pendingFile = pending
      self.claimedFile = claimed
      self.quarantineFile = quarantine
      self.delayedFile = delayed
      self.stateFile = stateFD
    } catch let error as SystemCallError {
      switch error.errno {
      // EISDIR and ENXIO: a directory or a socket where `state` belongs, refused by its open
      // for writing before the type check.
      case .tooManySymbolicLinkLevels, .notDirectory, .fileExists, .invalidArgument,
        .improperLink, .isDirectory, .noSuchAddressOrDevice:
        throw AppGroupMailboxError.containerUnavailable(error.cause("open mailbox"))
      default: throw error.mailboxError("open mailbox")
      }
    }
    self.path = containerPath + "/" + Self.root + "/" + name
    self.readOnly = readOnly
    self.owner = owner
  }

  /// Where the namespace directory is (its mount id and device), taken once at open, for the
  /// check of `keys/` when a keyed enqueue opens it (``Placement/holds(_:)``).
  let namespacePlacement: Placement

  /// The mount and device of a directory, to tell whether an entry opened in it is on them, so
  /// renames between the two cannot fail with EXDEV (rename(2)).
  struct Placement {
    /// The mount id (statx(2) `stx_mnt_id`, Linux 5.8 and later); negative where the kernel
    /// does not report it or statx failed.
    let mount: Int64
    /// The device (`st_dev`); nil when fstat failed.
    let device: dev_t?

    /// The placement of the open file `fd`.
    init(_ fd: Int32) {
      mount = Int64(cmailbox_mount_id(fd))
      device = (try? Syscall.fstat(fd))?.st_dev
    }

    /// Whether the open file `fd` is on this mount: the same mount id, which tells a bind
    /// mount of the same filesystem apart; and, unless `fd` is a regular file, the same device,
    /// which tells a btrfs subvolume apart (one mount, its own device, no renames across). A
    /// regular file is not held to the device where the mount id is known: overlayfs gives it
    /// the device of the layer it comes from. Where the kernel reports no mount id, the device
    /// alone. A failed statx or fstat counts as the same: the next system call on it reports
    /// its own error. Two system calls (one statx, one fstat).
    func holds(_ fd: Int32) -> Bool {
      let own = mount >= 0 ? Int64(cmailbox_mount_id(fd)) : -2
      if own >= 0, own != mount { return false }
      guard let info = try? Syscall.fstat(fd), let device else { return true }
      if own >= 0, info.st_mode & S_IFMT == S_IFREG { return true }
      return info.st_dev == device
    }
  }

  /// Gives a file or directory this process just created in the namespace to the namespace's
  /// owner and group (see ``owner``; nothing when not running as root for another user).
  /// fchown(2) failing leaves the file as it is.
  func adoptOwner(_ fd: Int32) {
    if let owner { try? Syscall.chown(fd, owner.uid, owner.gid) }
  }

  /// Opens `state` (read-only when `readOnly`), creating it with `mode` when missing; an
  /// existing file keeps its mode. `O_NONBLOCK`: a FIFO planted as `state` fails the type check
  /// after the open instead of blocking it (open(2)); it changes nothing for a regular file.
  private static func openState(
    _ namespace: Int32, readOnly: Bool, mode: mode_t, owner: (uid: uid_t, gid: gid_t)?
  ) throws -> FileDescriptor {
    let flags = (readOnly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK
    do {
      return try FileDescriptor.open(namespace, stateName, flags, role: .stateFile)
    } catch let error as SystemCallError where error.isNotFound && !readOnly {
      do {
        let fd = try FileDescriptor.open(
          namespace, stateName, flags | O_CREAT | O_EXCL, mode: mode, role: .stateFile)
        // Explicit mode whatever the umask.
        try? Syscall.chmod(fd.rawValue, mode)
        if let owner { try? Syscall.chown(fd.rawValue, owner.uid, owner.gid) }
        return fd
      } catch let error as SystemCallError where error.errno == .fileExists {
        return try FileDescriptor.open(namespace, stateName, flags, role: .stateFile)
      }
    }
  }

  /// Creates the directory `path` and any missing parents, each with exactly `mode` (whatever
  /// the umask); existing directories are left as they are. Returns nil when `path` exists
  /// now, else the failed mkdirat(2).
  static func createMissing(_ path: String, mode: mode_t) -> SystemCallError? {
    var prefix = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      do {
        try Syscall.makeDirectory(AT_FDCWD, prefix, mode: mode)
        try? Syscall.chmod(AT_FDCWD, prefix, mode)
      } catch let error as SystemCallError where error.errno == .fileExists {
        continue
      } catch {
        return error as? SystemCallError
          ?? SystemCallError(call: "mkdirat", errno: Errno(rawValue: EIO))
      }
    }
    return nil
  }
}
