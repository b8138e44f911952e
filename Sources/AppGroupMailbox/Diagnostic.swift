/// A content-free event for application logging (``AppGroupMailbox/Diagnostic``).
///
/// No case carries message bytes, and diagnostics are delivered after the mailbox has released
/// its locks, so a handler may call back into the mailbox. Cases may be added in later versions;
/// switch with a `default`.
public enum AppGroupMailboxDiagnostic: Sendable, Equatable, Hashable {
  /// A message older than ``AppGroupMailboxLimits/messageLifetime`` was deleted.
  case expiredMessageRemoved
  /// A claim whose lease ran out was restored to pending at its original position.
  case abandonedClaimRecovered
  /// A symlink, FIFO, socket, device, directory or persistently hard-linked file under a message
  /// name, any entry under a name that is not a message name in `pending/`, or a second,
  /// different entry in the way of a move (reason `conflict`, see docs/FORMAT.md, "Moves"), was
  /// moved to quarantine (the entry itself; a link's target is never touched). See
  /// docs/SECURITY.md.
  case unsafeFileQuarantined
  /// A message file that could not be read as a message (empty, truncated, not JSON, wrong
  /// type, a future format, too large, or undecodable) was moved to quarantine.
  case malformedMessageQuarantined
  /// ``AppGroupMailboxOverflowPolicy/discardOldest`` deleted the oldest pending message of the
  /// lowest priority level.
  case oldestMessageDiscarded
  /// An entry could be neither moved on, moved to quarantine, nor deleted: an entry that is not a
  /// message file (for example a directory another user owns and keeps read-only, which only its
  /// owner may move to another directory or empty), or a message file whose own inode flags say
  /// immutable or append-only (chattr(1) `+i`, `+a`) or on which something is mounted (`mount
  /// --bind` onto the file), which a claim, a promotion or a recovery then leaves exactly as it
  /// is, with no quarantine or delete attempt. It is left where it is
  /// and passed over, and delivery goes on; it is met, and reported, again on later passes until
  /// its owner or root removes it, its flag or the mount (docs/SECURITY.md).
  case unsafeEntryLeftInPlace
  /// The mailbox is full of entries nothing can claim (compatibility with the package we follow).
  case unclaimableFilesPresent
  /// Quarantine was over ``AppGroupMailboxLimits/maxQuarantinedFiles``; its oldest file was
  /// deleted.
  case quarantinedFileDiscarded
  /// A temporary file left by a crashed writer was deleted after its grace period.
  case staleTemporaryFileRemoved
  /// A message reached ``AppGroupMailboxLimits/maxDeliveryAttempts`` without an acknowledge and
  /// was moved to quarantine as a dead letter.
  case deadLetterQuarantined
  /// A move found its target name taken by the same file (a second link left by a crash in the
  /// link-then-unlink fallback) or a byte-equal copy, and deleted the entry it was moving as a
  /// duplicate: the message stays once, under the target name (docs/FORMAT.md, "Moves").
  case duplicateEntryDropped
  /// A watcher could not use inotify and checks its directory on a timer instead (every
  /// `pollingInterval` seconds): `systemCall` failed with `errno`, for example `inotify_init1`
  /// with `EMFILE` (24) past `fs.inotify.max_user_instances`, or `inotify_add_watch` with
  /// `ENOSPC` (28) past `fs.inotify.max_user_watches` (inotify(7)). Wake-ups are slower but
  /// nothing is missed.
  case wakeUpsPolling(systemCall: String, errno: Int32)
  /// The kernel dropped inotify events (`IN_Q_OVERFLOW`, past
  /// `fs.inotify.max_queued_events`); waiting consumers were woken to rescan everything.
  case wakeUpQueueOverflowed
  /// The mailbox already existed with stored settings (docs/FORMAT.md, "The settings file")
  /// that differ from the limits, overflow policy or sharing mode this opener passed: the
  /// stored ones apply. `differingFields` names the fields (`"maxMessages"`,
  /// `"maxPayloadBytes"`, `"messageLifetime"`, `"maxQuarantinedFiles"`,
  /// `"maxDeliveryAttempts"`, `"overflowPolicy"`, `"sharing"`). Reported once, by the
  /// initialiser, on its thread; change stored settings with
  /// ``AppGroupRawMailbox/updateSettings(_:)`` or `mailboxctl config`.
  case storedSettingsApplied(differingFields: [String])
}
