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
  /// Whether the watched directories are still the ones their paths name: nil when they are,
  /// else the input that says what to do (`.gone`, or `.watchLost` to watch the directory the
  /// path names now). Moving an ancestor (a renamed container) moves the watched directories
  /// without an inotify event on any watch, so the watcher asks this on a timer
  /// (``WatcherCore/placeCheckInterval``).
  func placeCheck() -> WakeUpStateMachine.Input?
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
    } catch let error as SystemCallError where error.errno == .noSuchFileOrDirectory {
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

/// A mailbox's `pending/` area (arrivals), its `delayed/` area (arrivals, so a waiting consumer
/// learns of a new due time and can sleep until it) and its namespace directory (deletion or
/// move).
///
/// The mailbox keeps its directories open, so when either is deleted, moved or replaced the
/// watcher cannot follow it: it finishes with ``AppGroupMailboxError/mailboxDirectoryRemoved``
/// and the owner opens the mailbox again.
final class PendingAreaTarget: WakeUpTarget {
  let directories: SpoolDirectories
  /// The earliest due time in `delayed/` at the previous scan (nil: none, or no scan yet), so a
  /// polling watcher reports a new earlier due time as a change.
  private let lastEarliestDue = Locked<(scanned: Bool, due: Int64?)>((false, nil))

  init(directories: SpoolDirectories) { self.directories = directories }

  var pendingPath: String { directories.path + "/pending" }
  var delayedPath: String { directories.path + "/delayed" }

  func addWatches(_ instance: InotifyInstance, handler: @escaping InotifyInstance.Handler)
    throws -> [InotifyWatch]
  {
    let pending = try addWatch(
      instance, fd: directories.pending, path: pendingPath,
      mask: InotifyMask.arrivals | InotifyMask.selfGone | InotifyMask.options, handler: handler)
    var added = [pending]
    do {
      // An open descriptor keeps a deleted directory's inode alive, so `IN_DELETE_SELF` would
      // only come when the mailbox closes it: watch the namespace for `pending` leaving instead.
      added.append(
        try addWatch(
          instance, fd: directories.namespace, path: directories.path,
          mask: InotifyMask.selfGone | InotifyMask.areaChanges | InotifyMask.options,
          handler: handler))
      added.append(
        try addWatch(
          instance, fd: directories.delayed, path: delayedPath,
          mask: InotifyMask.arrivals | InotifyMask.options, handler: handler))
      return added
    } catch {
      for watch in added { instance.remove(watch) }
      throw error
    }
  }

  func classify(_ event: InotifyEvent) -> WakeUpStateMachine.Input? {
    if let common = classifyCommon(event) { return common }
    guard let name = event.name else { return nil }
    // `delayed/` as `pending/`: a waiter holding the old one would compute due times from, and
    // promote out of, a directory no producer writes to any more.
    if event.mask & InotifyMask.areaChanges != 0,
      Self.followedAreas.contains(where: { $0.name == name })
    {
      return .watchLost
    }
    // A new settings file (renamed into place): a hold or resume, so a held drain wakes.
    if name == Spool.settingsName, event.has(IN_MOVED_TO) { return .changed }
    guard event.mask & InotifyMask.arrivals != 0 else { return nil }
    // Names are checked, not which watch the event came from: a pending name only arrives in
    // `pending/`, a delayed name (the due time before a pending name) only in `delayed/`, and a
    // misplaced one only costs a spurious wake-up.
    if PendingName(parsing: name) != nil || DelayedName(parsing: name) != nil { return .changed }
    return nil
  }

  func reopen() -> Bool { isFollowable }

  func placeCheck() -> WakeUpStateMachine.Input? { isFollowable ? nil : .gone }

  private var isFollowable: Bool { directories.isInPlace(areas: Self.followedAreas) }

  /// The areas a waiter follows: where messages become claimable.
  private static let followedAreas: [SpoolArea] = [.pending, .delayed]

  /// Found when `pending/` holds a message name, or when the earliest due time in `delayed/`
  /// differs from the previous scan's (a new delayed message a polling watcher would otherwise
  /// not report; the first scan only records it).
  func scan() -> WakeUpStateMachine.Input {
    guard isFollowable else { return .gone }
    let earliestDue = (try? Syscall.list(directories.delayed))?.compactMap {
      DelayedName(parsing: $0.name)?.dueMicros
    }.min()
    let dueChanged = lastEarliestDue.withLock { last -> Bool in
      defer { last = (true, earliestDue) }
      return last.scanned && earliestDue != nil && earliestDue != last.due
    }
    guard let entries = try? Syscall.list(directories.pending) else { return .scanned(found: true) }
    return .scanned(found: dueChanged || entries.contains { PendingName(parsing: $0.name) != nil })
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
    var lastSeen: FileStamp?
    var scannedOnce = false
    /// The device and inode of the directory the current watch is on.
    var watched: (dev: UInt, ino: UInt)?
  }
  private let state = Locked(State())

  /// Creates the notification directory when missing.
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)``.
  init(file: NotificationFile) throws {
    self.file = file
    try file.openDirectory().close()
  }

  func addWatches(_ instance: InotifyInstance, handler: @escaping InotifyInstance.Handler)
    throws -> [InotifyWatch]
  {
    guard let directory = try? file.openDirectory() else {
      throw SystemCallError(call: "openat", errno: .noSuchFileOrDirectory)
    }
    let fd = directory.rawValue
    let mask =
      InotifyMask.arrivals | InotifyMask.selfGone | InotifyMask.options
      | InotifyMask.bits(IN_ATTRIB, IN_CLOSE_WRITE)
    let identity = (try? Syscall.fstat(fd)).map { (dev: UInt($0.st_dev), ino: UInt($0.st_ino)) }
    state.withLock { $0.watched = identity }
    return [try addWatch(instance, fd: fd, path: file.directoryPath, mask: mask, handler: handler)]
  }

  /// `.watchLost` when the path names another directory than the one watched (or none): the
  /// watcher re-watches the path, re-creating the directory, as after its deletion.
  func placeCheck() -> WakeUpStateMachine.Input? {
    guard let watched = state.withLock({ $0.watched }) else { return nil }
    guard let named = try? Syscall.lstat(AT_FDCWD, file.directoryPath),
      UInt(named.st_dev) == watched.dev, UInt(named.st_ino) == watched.ino
    else { return .watchLost }
    return nil
  }

  func classify(_ event: InotifyEvent) -> WakeUpStateMachine.Input? {
    if let common = classifyCommon(event) { return common }
    return event.name == file.fileName ? .changed : nil
  }

  func reopen() -> Bool {
    guard let fd = try? file.openDirectory() else { return false }
    fd.close()
    return true
  }

  /// The first scan reports a wake-up (the consumer drains once at start); later ones (polling)
  /// report whether the file's inode or times changed since the last look.
  func scan() -> WakeUpStateMachine.Input {
    guard let directory = try? file.openDirectory() else { return .gone }
    let stamp = (try? Syscall.lstat(directory.rawValue, file.fileName)).map(
      FileStamp.init)
    directory.close()
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
