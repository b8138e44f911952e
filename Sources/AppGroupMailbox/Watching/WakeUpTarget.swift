import Foundation
import Glibc
import MailboxLocks

/// What a watcher observes, and the I/O specific to it: adding watches, telling which events
/// matter, checking the directory, and following a replaced directory.
protocol WakeUpTarget: Sendable {
  /// Adds the inotify watches this target needs.
  /// - Throws: ``SystemCallError`` from inotify_add_watch(2).
  func addWatches(_ instance: InotifyInstance, handler: @escaping InotifyInstance.Handler)
    throws -> [InotifyWatch]
  /// The machine input for one event of a current watch, or nil when it does not matter.
  func classify(_ event: InotifyEvent) -> WakeUpStateMachine.Input?
  /// Re-opens the directory after its watch was lost; false when it cannot be followed.
  func reopen() -> Bool
  /// Checks the directory: `.scanned(found:)` or `.gone`.
  func scan() -> WakeUpStateMachine.Input
  /// Releases what the target opened.
  func close()
}

extension WakeUpTarget {
  /// Classifies the events every target shares: overflow and a lost watch.
  func classifyCommon(_ event: InotifyEvent) -> WakeUpStateMachine.Input? {
    if event.has(IN_Q_OVERFLOW) { return .overflow }
    if event.mask & InotifyMask.watchLost != 0 { return .watchLost }
    return nil
  }

  /// Adds a watch on the open directory `fd` through its `/proc/self/fd` name (so exactly that
  /// directory, whatever its path names now), or through `path` when `/proc` is missing.
  func addWatch(
    _ instance: InotifyInstance, fd: Int32, path: String, mask: UInt32,
    handler: @escaping InotifyInstance.Handler
  ) throws -> InotifyWatch {
    do {
      return try instance.add(path: Syscall.procPath(fd), mask: mask, handler: handler)
    } catch let error as SystemCallError where error.errno == ENOENT {
      return try instance.add(
        path: path, mask: mask | UInt32(bitPattern: IN_DONT_FOLLOW), handler: handler)
    }
  }
}

/// Whether the open directory `fd` is still the directory `path` names (same device and inode,
/// not deleted).
func isSameDirectory(_ fd: Int32, at path: String) -> Bool {
  guard let held = try? Syscall.fstat(fd), held.st_nlink > 0,
    let named = try? Syscall.lstat(AT_FDCWD, path)
  else { return false }
  return held.st_dev == named.st_dev && held.st_ino == named.st_ino
}

/// A mailbox's `pending/` area (arrivals) and its namespace directory (deletion or move).
///
/// The mailbox keeps its directories open, so when either is deleted, moved or replaced the
/// watcher cannot follow it: it finishes with ``AppGroupMailboxError/mailboxDirectoryRemoved``
/// and the owner opens the mailbox again.
final class PendingAreaTarget: WakeUpTarget {
  let directories: SpoolDirectories

  init(directories: SpoolDirectories) { self.directories = directories }

  var pendingPath: String { directories.path + "/pending" }

  func addWatches(_ instance: InotifyInstance, handler: @escaping InotifyInstance.Handler)
    throws -> [InotifyWatch]
  {
    let pending = try addWatch(
      instance, fd: directories.pending, path: pendingPath,
      mask: InotifyMask.arrivals | InotifyMask.selfGone | InotifyMask.options, handler: handler)
    do {
      // An open descriptor keeps a deleted directory's inode alive, so `IN_DELETE_SELF` would
      // only come when the mailbox closes it: watch the namespace for `pending` leaving instead.
      let namespace = try addWatch(
        instance, fd: directories.namespace, path: directories.path,
        mask: InotifyMask.selfGone | InotifyMask.areaChanges | InotifyMask.options,
        handler: handler)
      return [pending, namespace]
    } catch {
      instance.remove(pending)
      throw error
    }
  }

  func classify(_ event: InotifyEvent) -> WakeUpStateMachine.Input? {
    if let common = classifyCommon(event) { return common }
    guard let name = event.name else { return nil }
    if name == "pending", event.mask & InotifyMask.areaChanges != 0 { return .watchLost }
    guard event.mask & InotifyMask.arrivals != 0 else { return nil }
    return PendingName(parsing: name) == nil ? nil : .changed
  }

  func reopen() -> Bool { isFollowable }

  private var isFollowable: Bool {
    isSameDirectory(directories.pending, at: pendingPath)
      && isSameDirectory(directories.namespace, at: directories.path)
  }

  func scan() -> WakeUpStateMachine.Input {
    guard isFollowable else { return .gone }
    guard let entries = try? Syscall.list(directories.pending) else { return .scanned(found: true) }
    return .scanned(found: entries.contains { PendingName(parsing: $0.name) != nil })
  }

  func close() {}
}

/// A notification name: the file `<container>/AppGroupMailbox/@notify/<encoded name>`, which
/// producers touch (see ``NotificationFile``). Watches the `@notify` directory for that name's
/// events; re-creates the directory when it is deleted or moved.
///
/// It keeps no descriptor open between operations: an open descriptor would keep a deleted
/// directory alive and delay its `IN_DELETE_SELF` (inotify(7)).
final class NotificationTarget: WakeUpTarget {
  let file: NotificationFile
  private struct State {
    var lastSeen: NotificationFile.Stamp?
    var scannedOnce = false
  }
  private let state = Locked(State())

  /// Creates the notification directory when missing.
  /// - Throws: ``AppGroupMailboxError/containerUnavailable``.
  init(file: NotificationFile) throws {
    self.file = file
    Syscall.close(try file.openDirectory())
  }

  func addWatches(_ instance: InotifyInstance, handler: @escaping InotifyInstance.Handler)
    throws -> [InotifyWatch]
  {
    guard let fd = try? file.openDirectory() else {
      throw SystemCallError(call: "openat", errno: ENOENT)
    }
    defer { Syscall.close(fd) }
    let mask =
      InotifyMask.arrivals | InotifyMask.selfGone | InotifyMask.options
      | InotifyMask.bits(IN_ATTRIB, IN_CLOSE_WRITE)
    return [try addWatch(instance, fd: fd, path: file.directoryPath, mask: mask, handler: handler)]
  }

  func classify(_ event: InotifyEvent) -> WakeUpStateMachine.Input? {
    if let common = classifyCommon(event) { return common }
    return event.name == file.fileName ? .changed : nil
  }

  func reopen() -> Bool {
    guard let fd = try? file.openDirectory() else { return false }
    Syscall.close(fd)
    return true
  }

  /// The first scan reports a wake-up (the consumer drains once at start); later ones (polling)
  /// report whether the file's inode or times changed since the last look.
  func scan() -> WakeUpStateMachine.Input {
    guard let fd = try? file.openDirectory() else { return .gone }
    let stamp = (try? Syscall.lstat(fd, file.fileName)).map(NotificationFile.Stamp.init)
    Syscall.close(fd)
    return state.withLock { state in
      defer {
        state.lastSeen = stamp
        state.scannedOnce = true
      }
      return .scanned(found: !state.scannedOnce || stamp != state.lastSeen)
    }
  }

  func close() {}
}
