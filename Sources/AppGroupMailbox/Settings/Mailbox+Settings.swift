public import Foundation

/// The stored settings, the same for ``AppGroupMailbox`` and ``AppGroupRawMailbox``.
extension AppGroupMailboxProtocol {
  /// The mailbox's stored settings (docs/FORMAT.md, "The settings file"), re-read when the
  /// file changed since this mailbox last read it.
  public var settings: AppGroupMailboxSettings { inspector.spool.freshSettings }

  /// Changes the mailbox's stored settings for every process that uses it: `change` gets the
  /// current settings; the result is checked, then written atomically (a flushed temporary file
  /// renamed over `settings`) under the namespace lock, the lock every enqueue takes to check
  /// the depth bound. Enqueues and claims that start after this returns follow the new
  /// settings in every process. Lowering ``AppGroupMailboxSettings/maxPayloadBytes`` never
  /// makes a stored message unreadable (see ``AppGroupMailboxSettings/largestPayloadBytes``);
  /// lowering another bound deletes nothing by itself, but what the mailbox holds then meets
  /// it at the next operation of any process: below the depth, ``AppGroupMailboxSettings/maxMessages``
  /// makes new messages wait or be refused until the depth is under it
  /// (``AppGroupMailboxOverflowPolicy/rejectNewest``), or makes the next enqueue delete
  /// pending messages until it is (``AppGroupMailboxOverflowPolicy/discardOldest``); a shorter
  /// lifetime makes the next claim or maintenance delete the messages now older; a lower
  /// quarantine bound deletes the oldest quarantined files at the next quarantine or
  /// maintenance; a lower delivery bound makes dead letters of pending messages delivered that
  /// often, at their next claim. Members of the file this build does not know (hints a newer
  /// version added) are written back as they were. Process safe.
  ///
  /// - Returns: The settings now stored.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming the first invalid field, or
  ///   `"sharing"` when `change` altered the sharing mode (fixed when the mailbox is created);
  ///   nothing is written then; also `"settings format N"` or `"settings: <why>"` when the
  ///   file, read again under the lock, has a newer format or does not read (it is left as it
  ///   is), and `"settings would be larger than 4096 bytes"` when the new file with the members
  ///   this build does not know would be (nothing written).
  ///   ``AppGroupMailboxError/ioFailure(_:)`` (operation `"write settings"`).
  @discardableResult
  public func updateSettings(_ change: (inout AppGroupMailboxSettings) throws -> Void) throws
    -> AppGroupMailboxSettings
  {
    try inspector.spool.updateSettings(change)
  }
}

extension AppGroupMailboxInspector {
  /// Opens the existing mailbox `namespace` inside `containerURL` for looking only: nothing is
  /// created, nothing is opened for writing and no mode changes, so it works on a read-only
  /// file system and for a user who may only read the mailbox. ``status()``,
  /// ``entries(in:)``, ``envelope(_:includeMessage:)``, ``settings`` and
  /// ``wakeUps(pollingInterval:)`` work; ``requeueQuarantined(_:)`` and
  /// ``purgeQuarantined(_:)`` throw ``AppGroupMailboxError/ioFailure(_:)`` with errno `EBADF`.
  ///
  /// - Throws: ``AppGroupMailboxError/invalidNamespace``;
  ///   ``AppGroupMailboxError/containerUnavailable`` (a symlink, not a directory, areas on
  ///   different filesystems); ``AppGroupMailboxError/ioFailure(_:)`` (operation
  ///   `"open mailbox"`) naming the system call and errno, for example `ENOENT` when the
  ///   mailbox does not exist or `EACCES` when the user may not search its directories.
  public init(containerURL: URL, namespace: String) throws {
    guard NamespaceRule.isValid(namespace) else { throw AppGroupMailboxError.invalidNamespace }
    let configuration = SpoolConfiguration(
      limits: .init(), overflowPolicy: .rejectNewest, durability: .full, permissions: .private,
      messageTypeTag: nil, clock: .system, diagnostic: nil, onPending: nil)
    self.init(
      spool: try Spool(
        container: containerURL, namespace: namespace, configuration: configuration,
        readOnly: true))
  }

  /// The mailbox's stored settings (the defaults when a mailbox made before settings files
  /// has none yet).
  public var settings: AppGroupMailboxSettings { spool.freshSettings }

  /// Starts watching the mailbox's `pending/` area, as ``AppGroupRawMailbox/wakeUps(pollingInterval:)``
  /// does, without writing anything.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"pollingInterval"`).
  public func wakeUps(pollingInterval: TimeInterval = 1) throws -> AppGroupMailboxWatcher {
    try spool.watcher(pollingInterval: pollingInterval)
  }
}
