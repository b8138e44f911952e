public import Foundation
import Glibc

extension AppGroupMailboxNamespace {
  /// The namespaces that have a mailbox directory in the container at `containerURL`, in byte
  /// order of their names (a Linux addition; the Apple package has no listing).
  ///
  /// A namespace is an entry of `<container>/AppGroupMailbox/` whose name passes
  /// ``isValid(_:)`` and which is a directory; symbolic links (never opened as a namespace, see
  /// docs/SECURITY.md), files and other names (such as `@notify`, the notification directory)
  /// are left out. A directory holding only a spool of the old format is listed too. Nothing is
  /// created, opened for writing or read but directory entries, so this works on a read-only
  /// filesystem and for a user who may only read the container.
  ///
  /// - Returns: The names; empty when the container holds no `AppGroupMailbox` directory yet.
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` when the container cannot be
  ///   opened as a directory, or `AppGroupMailbox` inside it is not a directory (a symbolic link
  ///   included), naming the system call and errno (operation `"list namespaces"`);
  ///   ``AppGroupMailboxError/ioFailure(_:)`` when reading the directory fails.
  /// - Complexity: one listing of the directory and, on filesystems that do not report entry
  ///   types, one fstatat(2) per entry: O(n) in its entries.
  /// Safe from any thread and process; the answer is a snapshot (a namespace created or removed
  /// meanwhile may be missing or still listed).
  public static func all(inContainer containerURL: URL) throws -> [String] {
    guard let root = try openMailboxesDirectory(containerURL) else { return [] }
    let names = try mapIO("list namespaces") {
      try Syscall.list(root.rawValue).compactMap { entry -> String? in
        guard isValid(entry.name) else { return nil }
        switch Int32(entry.type) {
        case Int32(DT_DIR): return entry.name
        case Int32(DT_UNKNOWN):
          let info = try? Syscall.lstat(root.rawValue, entry.name)
          return info.map { $0.st_mode & S_IFMT == S_IFDIR } == true ? entry.name : nil
        default: return nil
        }
      }
    }
    return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
  }

  /// `<container>/AppGroupMailbox`, opened without following a link; nil when it does not exist.
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` as ``all(inContainer:)``.
  private static func openMailboxesDirectory(_ containerURL: URL) throws -> FileDescriptor? {
    do {
      let container = try FileDescriptor.open(
        AT_FDCWD, containerURL.path, O_RDONLY | O_DIRECTORY, role: .container)
      return try FileDescriptor.open(
        container.rawValue, SpoolDirectories.root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
        role: .mailboxesDirectory)
    } catch let error as SystemCallError {
      if error.isNotFound, error.role == .mailboxesDirectory { return nil }
      throw AppGroupMailboxError.containerUnavailable(error.cause("list namespaces"))
    }
  }
}
