public import Foundation

/// Coalesced wake-ups for one mailbox or one notification name (a Linux addition; on Apple
/// platforms the package we follow uses Darwin notifications).
///
/// A wake-up is a payload-free hint that something may be pending: after one, claim until the
/// mailbox is empty. Any number of changes before the consumer looks again coalesce into one
/// wake-up. Iterate the watcher as an `AsyncSequence`, or block with ``wait(timeout:)``.
///
/// On Linux a watcher adds inotify(7) watches first and scans afterwards, so nothing arriving
/// in between is missed. Every process shares one inotify instance among all its watchers and
/// its mailboxes' claim indexes (closed with its last user); a claim may read the descriptor
/// too, but a watcher's events are handled only on one dedicated thread, never on a Swift
/// concurrency thread. `IN_Q_OVERFLOW` wakes every consumer to rescan
/// (``AppGroupMailboxDiagnostic/wakeUpQueueOverflowed``). When inotify is unavailable or at a
/// limit (`EMFILE` from inotify_init1(2), `ENOSPC` from inotify_add_watch(2)), the watcher
/// checks the directory every `pollingInterval` seconds instead and reports
/// ``AppGroupMailboxDiagnostic/wakeUpsPolling(systemCall:errno:)``. inotify sees no changes
/// made by other NFS clients: use a local filesystem. See docs/WAKEUPS.md.
///
/// ``close()`` (or releasing the last reference) removes the watches, stops the timer and
/// closes what the watcher opened; waiting callers return. Thread safety: every member may be
/// called from any thread; several tasks may wait at once and each is woken.
public final class AppGroupMailboxWatcher: Sendable, AsyncSequence {
  /// Each element is one coalesced wake-up.
  public typealias Element = Void

  let core: WatcherCore

  init(
    target: any WakeUpTarget, pollingInterval: TimeInterval,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?,
    placeCheckInterval: TimeInterval = WatcherCore.placeCheckInterval
  ) {
    core = WatcherCore(
      target: target, pollingInterval: pollingInterval, diagnostic: diagnostic,
      placeCheckInterval: placeCheckInterval)
  }

  /// Watches the notification name `notificationName` in `containerURL`: wakes after each
  /// enqueue, release and recovery of every mailbox there opened with that name (in any
  /// process), and after anyone touches `<container>/AppGroupMailbox/@notify/<name>`.
  ///
  /// The first wake-up comes at once (drain your mailboxes once when you start).
  /// - Parameters:
  ///   - notificationName: Any non-empty string whose encoded form fits in 255 bytes (see
  ///     docs/WAKEUPS.md).
  ///   - containerURL: The shared container; `AppGroupMailbox/@notify` is created inside it.
  ///   - pollingInterval: Seconds between checks when inotify cannot be used; greater than 0.
  ///     Default 1.
  ///   - permissions: Modes for what is created (see ``AppGroupMailboxPermissions``).
  ///   - diagnostic: Receives ``AppGroupMailboxDiagnostic/wakeUpsPolling(systemCall:errno:)``
  ///     and ``AppGroupMailboxDiagnostic/wakeUpQueueOverflowed``, on any thread.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"notificationName"` or
  ///   `"pollingInterval"`); ``AppGroupMailboxError/containerUnavailable``.
  public convenience init(
    notificationName: String,
    containerURL: URL,
    pollingInterval: TimeInterval = 1,
    permissions: AppGroupMailboxPermissions = .private,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil
  ) throws {
    try Self.validate(pollingInterval: pollingInterval)
    let file = try NotificationFile(
      containerPath: containerURL.path, name: notificationName, permissions: permissions)
    self.init(
      target: try NotificationTarget(file: file), pollingInterval: pollingInterval,
      diagnostic: diagnostic)
  }

  /// As ``init(notificationName:containerURL:pollingInterval:permissions:diagnostic:)`` in the
  /// container of the app group `appGroupIdentifier` (see
  /// ``AppGroupContainer/url(forIdentifier:environment:)``).
  public convenience init(
    notificationName: String,
    appGroupIdentifier: String,
    pollingInterval: TimeInterval = 1,
    permissions: AppGroupMailboxPermissions = .private,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil
  ) throws {
    try self.init(
      notificationName: notificationName,
      containerURL: try AppGroupContainer.url(forIdentifier: appGroupIdentifier),
      pollingInterval: pollingInterval, permissions: permissions, diagnostic: diagnostic)
  }

  static func validate(pollingInterval: TimeInterval) throws {
    guard pollingInterval > 0, pollingInterval.isFinite else {
      throw AppGroupMailboxError.invalidLimit("pollingInterval")
    }
  }

  /// Blocks the calling thread until a wake-up or `timeout` seconds (nil waits without limit).
  ///
  /// Do not call it from a Swift concurrency task (it blocks the thread); iterate the watcher
  /// there instead.
  /// - Returns: true when something may be pending (a wake-up was taken), false on timeout or
  ///   after ``close()``. A timeout of 0 or less only takes a wake-up already waiting;
  ///   infinity waits without limit, as nil does.
  /// - Throws: ``AppGroupMailboxError/mailboxDirectoryRemoved`` when the mailbox's directory
  ///   was deleted, moved or replaced; ``AppGroupMailboxError/invalidLimit(_:)`` naming
  ///   `timeout` when it is NaN.
  @available(*, noasync, message: "it blocks its thread; iterate the watcher in async code")
  public func wait(timeout: TimeInterval?) throws -> Bool {
    try Self.interpret(core.wait(timeout: TimeValue.timeout(timeout)))
  }

  static func interpret(_ outcome: WaitOutcome) throws -> Bool {
    switch outcome {
    case .woke: return true
    case .timedOut, .cancelled, .finished(.closed): return false
    case .finished(.directoryRemoved): throw AppGroupMailboxError.mailboxDirectoryRemoved
    }
  }

  /// Whether the watcher fell back to polling (inotify unavailable or at a limit).
  public var isPolling: Bool { core.mode == .polling }

  /// Stops watching and closes everything the watcher opened; every wait returns. Idempotent.
  public func close() { core.close() }

  deinit { core.close() }

  /// Iterates wake-ups until the watcher is closed or the task is cancelled.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let watcher: AppGroupMailboxWatcher

    /// The next wake-up; nil after ``AppGroupMailboxWatcher/close()`` or when the task is
    /// cancelled.
    /// - Throws: ``AppGroupMailboxError/mailboxDirectoryRemoved``.
    public mutating func next() async throws -> Void? {
      let outcome = await watcher.core.wait(timeout: nil)
      return try AppGroupMailboxWatcher.interpret(outcome) ? () : nil
    }
  }

  /// An iterator over this watcher's wake-ups. Iterators share the watcher's single wake-up
  /// flag.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }
}
