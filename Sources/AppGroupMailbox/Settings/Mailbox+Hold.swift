import Foundation

extension AppGroupMailboxProtocol {
  /// Holds delivery from this mailbox (typed or untyped) for every process that uses it, as Postfix's
  /// `postsuper -h` holds mail: from the next claim in any process (each claim re-checks the
  /// settings file, one fstatat(2)), ``claimPending(limit:)`` returns nothing, ``drain(batchSize:pollingInterval:isolation:handler:)``
  /// and ``wait(timeout:)`` wait, and ``drainPending(batchSize:isolation:handler:)`` returns at once.
  /// Enqueues go on (the depth bound still applies); claims already taken are untouched and
  /// may be acknowledged, released and renewed; abandoned claims are still recovered and due
  /// delayed messages still made pending.
  ///
  /// The hold is stored in the mailbox's settings file (``AppGroupMailboxSettings/isHeld``;
  /// docs/FORMAT.md, "The settings file"), so it survives restarts until ``resume()``. It is
  /// written atomically under the namespace lock that ``updateSettings(_:)`` takes, and the
  /// rename of the settings file wakes every watcher of the mailbox. Holding a held mailbox
  /// changes nothing.
  ///
  /// Thread and process safety: safe from any thread and any process (also a group member of a
  /// group-shared mailbox).
  ///
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)`` (operation `"write settings"`) naming the
  ///   system call and errno when the settings file cannot be written;
  ///   ``AppGroupMailboxError/invalidLimit(_:)`` as ``updateSettings(_:)`` throws it for a file
  ///   that does not read or would grow too large.
  public func pause() throws { try inspector.spool.setHeld(true) }

  /// Ends a hold set by ``pause()`` (in any process): claims deliver again, and waiting drains
  /// in every process wake up (the settings file's rename is a wake-up). Resuming a mailbox
  /// that is not held changes nothing.
  ///
  /// Thread and process safety: as ``pause()``.
  ///
  /// - Throws: as ``pause()``.
  public func resume() throws { try inspector.spool.setHeld(false) }

  /// Whether delivery is held (``pause()``), as the settings file says now: one fstatat(2), and
  /// a read of the file when it changed.
  public var isHeld: Bool { inspector.spool.isHeld }

  /// ``pause()`` (`held` true) or ``resume()``, returning whether this call changed the hold
  /// (false when it already was so). Decided under the namespace lock the write takes, so of
  /// processes that hold (or resume) at once exactly one is told it changed it (`mailboxctl
  /// hold` prints "held" or "already held" from it). Throws as ``pause()``.
  package func setHold(_ held: Bool) throws -> Bool { try inspector.spool.setHeld(held) }
}

extension AppGroupMailboxInspector {
  /// Whether delivery is held (``AppGroupMailboxProtocol/pause()``), as the settings file says
  /// now. An inspector sees the hold but cannot change it: it opens nothing for writing.
  public var isHeld: Bool { spool.isHeld }
}
