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

  /// Opens the namespace directory, creating what is missing with `permissions`.
  ///
  /// - Throws: ``AppGroupMailboxError/containerUnavailable`` when the container cannot be
  ///   created or opened, a directory is a symlink or not a directory, or the areas span
  ///   filesystems.
  init(container: URL, namespace name: String, permissions: AppGroupMailboxPermissions) throws {
    var opened: [Int32] = []
    func fail() -> AppGroupMailboxError {
      for fd in opened { Syscall.close(fd) }
      return .containerUnavailable
    }
    let containerPath = container.path
    guard Self.createMissing(containerPath, mode: permissions.directoryMode) else { throw fail() }
    guard let containerFD = try? Syscall.open(AT_FDCWD, containerPath, O_RDONLY | O_DIRECTORY)
    else { throw fail() }
    opened.append(containerFD)
    func openDirectory(_ parent: Int32, _ name: String) throws -> Int32 {
      let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
      if let fd = try? Syscall.open(parent, name, flags) {
        opened.append(fd)
        return fd
      }
      do {
        try Syscall.makeDirectory(parent, name, mode: permissions.directoryMode)
      } catch let error as SystemCallError where error.errno == EEXIST {
        // Created by a racing process, or a non-directory: the open below decides.
      } catch {
        throw fail()
      }
      guard let fd = try? Syscall.open(parent, name, flags) else { throw fail() }
      opened.append(fd)
      try? Syscall.chmod(fd, permissions.directoryMode)
      return fd
    }
    let root = try openDirectory(containerFD, Self.root)
    let namespaceFD = try openDirectory(root, name)
    var areaFDs: [Int32] = []
    for area in Self.areas { areaFDs.append(try openDirectory(namespaceFD, area)) }
    guard
      let stateFD = try? Syscall.open(
        namespaceFD, "state", O_RDWR | O_CREAT | O_NOFOLLOW, mode: permissions.fileMode)
    else { throw fail() }
    opened.append(stateFD)
    guard let stateInfo = try? Syscall.fstat(stateFD), stateInfo.st_mode & S_IFMT == S_IFREG,
      let device = try? Syscall.fstat(namespaceFD).st_dev
    else { throw fail() }
    for fd in areaFDs + [stateFD] {
      guard (try? Syscall.fstat(fd).st_dev) == device else { throw fail() }
    }
    // Explicit mode whatever the umask; fails harmlessly (EPERM) on another user's state file.
    try? Syscall.chmod(stateFD, permissions.fileMode)
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
  }

  /// Creates the directory `path` and any missing parents, each with exactly `mode` (whatever
  /// the umask); existing directories are left as they are. Returns whether `path` exists now.
  static func createMissing(_ path: String, mode: mode_t) -> Bool {
    var prefix = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      if mkdir(prefix, mode) == 0 {
        _ = Glibc.chmod(prefix, mode)
      } else if errno != EEXIST {
        return false
      }
    }
    return true
  }

  deinit {
    for fd in [namespace, tmp, pending, claimed, quarantine, delayed, state] { Syscall.close(fd) }
  }
}
