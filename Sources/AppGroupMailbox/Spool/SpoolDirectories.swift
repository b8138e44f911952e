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
  static let areas = ["tmp", "pending", "claimed", "quarantine", "delayed"]

  let namespace: Int32
  let tmp: Int32
  let pending: Int32
  let claimed: Int32
  let quarantine: Int32
  /// Messages not due yet (a not-before time in the future); never claimable from here.
  let delayed: Int32
  /// The `state` file: the lock every producer takes, and the counters it guards.
  let state: Int32
  let path: String
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
  /// who may only read can open it.
  ///
  /// - Throws: ``AppGroupMailboxError/containerUnavailable`` when a directory is a symlink or
  ///   not a directory, `state` is not a regular file, or the areas span filesystems;
  ///   ``AppGroupMailboxError/ioFailure(_:)`` (operation `"open mailbox"`) naming the system
  ///   call and errno of any other failure (EROFS, EACCES, ENAMETOOLONG, ENOENT...).
  init(
    container: URL, namespace name: String, permissions: AppGroupMailboxPermissions,
    readOnly: Bool = false,
    sharing: (Int32, Bool) throws -> AppGroupMailboxPermissions = { _, _ in .private }
  ) throws {
    var opened: [Int32] = []
    func fail(_ error: (any Error)? = nil) -> any Error {
      for fd in opened { Syscall.close(fd) }
      guard let error = error as? SystemCallError else {
        return error ?? AppGroupMailboxError.containerUnavailable
      }
      switch error.errno {
      case ELOOP, ENOTDIR, EEXIST: return AppGroupMailboxError.containerUnavailable
      default: return error.mailboxError("open mailbox")
      }
    }
    let containerPath = container.path
    if !readOnly, let error = Self.createMissing(containerPath, mode: permissions.directoryMode) {
      throw fail(error)
    }
    let containerFD: Int32
    do {
      containerFD = try Syscall.open(AT_FDCWD, containerPath, O_RDONLY | O_DIRECTORY)
    } catch {
      throw fail(error)
    }
    opened.append(containerFD)
    var mode = permissions
    var owner: (uid: uid_t, gid: gid_t)?
    func openDirectory(_ parent: Int32, _ name: String) throws -> (Int32, Bool) {
      let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
      do {
        let fd = try Syscall.open(parent, name, flags)
        opened.append(fd)
        return (fd, false)
      } catch let error as SystemCallError where error.isNotFound && !readOnly {
        // Created below.
      } catch {
        throw fail(error)
      }
      var created = true
      do {
        try Syscall.makeDirectory(parent, name, mode: mode.directoryMode)
      } catch let error as SystemCallError where error.errno == EEXIST {
        // Created by a racing process, or a non-directory: the open below decides.
        created = false
      } catch {
        throw fail(error)
      }
      do {
        let fd = try Syscall.open(parent, name, flags)
        opened.append(fd)
        // Explicit mode whatever the umask, only on what this call created.
        if created {
          try? Syscall.chmod(fd, mode.directoryMode)
          if let owner { _ = Glibc.fchown(fd, owner.uid, owner.gid) }
        }
        return (fd, created)
      } catch {
        throw fail(error)
      }
    }
    // The mailboxes' root directory of a group-shared container (setgid, the README's recipe)
    // is group-shared whatever the first namespace's mode, so later group-shared namespaces
    // stay reachable for the group.
    let requested = mode
    if let info = try? Syscall.fstat(containerFD), info.st_mode & S_ISGID != 0 {
      mode = .groupShared
    }
    let (root, _) = try openDirectory(containerFD, Self.root)
    mode = requested
    let (namespaceFD, createdNamespace) = try openDirectory(root, name)
    if geteuid() == 0, let info = try? Syscall.fstat(namespaceFD), info.st_uid != 0 {
      owner = (info.st_uid, info.st_gid)
    }
    do {
      mode = try sharing(namespaceFD, createdNamespace)
    } catch {
      throw fail(error)
    }
    var areaFDs: [Int32] = []
    for area in Self.areas { areaFDs.append(try openDirectory(namespaceFD, area).0) }
    let stateFD: Int32
    do {
      stateFD = try Self.openState(
        namespaceFD, readOnly: readOnly, mode: mode.fileMode, owner: owner)
    } catch {
      throw fail(error)
    }
    opened.append(stateFD)
    guard let stateInfo = try? Syscall.fstat(stateFD), stateInfo.st_mode & S_IFMT == S_IFREG,
      let device = try? Syscall.fstat(namespaceFD).st_dev
    else { throw fail() }
    for fd in areaFDs + [stateFD] {
      guard (try? Syscall.fstat(fd).st_dev) == device else { throw fail() }
    }
    Syscall.close(containerFD)
    Syscall.close(root)
    self.namespace = namespaceFD
    self.tmp = areaFDs[0]
    self.pending = areaFDs[1]
    self.claimed = areaFDs[2]
    self.quarantine = areaFDs[3]
    self.delayed = areaFDs[4]
    self.state = stateFD
    self.path = containerPath + "/" + Self.root + "/" + name
    self.readOnly = readOnly
    self.owner = owner
  }

  /// Gives a file or directory this process just created in the namespace to the namespace's
  /// owner and group (see ``owner``; nothing when not running as root for another user).
  /// fchown(2) failing leaves the file as it is.
  func adoptOwner(_ fd: Int32) {
    if let owner { _ = Glibc.fchown(fd, owner.uid, owner.gid) }
  }

  /// Opens `state` (read-only when `readOnly`), creating it with `mode` when missing; an
  /// existing file keeps its mode.
  private static func openState(
    _ namespace: Int32, readOnly: Bool, mode: mode_t, owner: (uid: uid_t, gid: gid_t)?
  ) throws -> Int32 {
    if readOnly { return try Syscall.open(namespace, "state", O_RDONLY | O_NOFOLLOW) }
    do {
      return try Syscall.open(namespace, "state", O_RDWR | O_NOFOLLOW)
    } catch let error as SystemCallError where error.isNotFound {
      do {
        let fd = try Syscall.open(
          namespace, "state", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        // Explicit mode whatever the umask.
        try? Syscall.chmod(fd, mode)
        if let owner { _ = Glibc.fchown(fd, owner.uid, owner.gid) }
        return fd
      } catch let error as SystemCallError where error.errno == EEXIST {
        return try Syscall.open(namespace, "state", O_RDWR | O_NOFOLLOW)
      }
    }
  }

  /// Creates the directory `path` and any missing parents, each with exactly `mode` (whatever
  /// the umask); existing directories are left as they are. Returns nil when `path` exists
  /// now, else the failed mkdir(2).
  static func createMissing(_ path: String, mode: mode_t) -> SystemCallError? {
    var prefix = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      if mkdir(prefix, mode) == 0 {
        _ = Glibc.chmod(prefix, mode)
      } else if errno != EEXIST {
        return SystemCallError(call: "mkdir", errno: errno)
      }
    }
    return nil
  }

  deinit {
    for fd in [namespace, tmp, pending, claimed, quarantine, delayed, state] { Syscall.close(fd) }
  }
}
