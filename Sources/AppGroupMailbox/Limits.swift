public import Foundation

/// Resource limits and retention policy for a mailbox (``AppGroupMailbox/Limits``).
///
/// Every bound is checked by ``validate()`` when a mailbox is created; a mailbox never holds more
/// than ``maxMessages`` pending plus claimed plus delayed messages. All but ``claimTimeout`` are
/// stored in the mailbox when it is created and bind every opener (README, "A mailbox keeps its
/// settings"); ``claimTimeout`` is this process's own.
public struct AppGroupMailboxLimits: Sendable, Equatable, Hashable {
  /// Largest number of messages pending plus claimed plus delayed at once (entries that are
  /// not messages, such as quarantined files, do not count); 1 to ``countCeiling``. Default 100.
  public var maxMessages: Int
  /// Largest size in bytes of one message file (envelope header plus encoded message), from 1
  /// to 64 MiB (67,108,864). Default 65,536.
  public var maxPayloadBytes: Int
  /// Seconds a message may live, counted from its `enqueuedAt`; at least ``resolution`` (1 µs,
  /// the mailbox's times count microseconds: a shorter one would read as 0). Default 86,400.
  /// Release, recovery and renewal never extend it; an active (unexpired) claim is never removed.
  public var messageLifetime: TimeInterval
  /// Seconds a claim's lease lasts before it counts as abandoned and is restored to pending;
  /// at least ``resolution`` (1 µs) and at most ``claimTimeoutCeiling`` (366 days). ``AppGroupMailbox/Claim/renew()``
  /// starts a fresh lease. Default 600. A lease that ends more than ``claimTimeoutCeiling`` after
  /// now cannot come from any process, so recovery treats it as run out (docs/FORMAT.md).
  public var claimTimeout: TimeInterval
  /// Largest number of files kept in quarantine; the newest are kept. 0 deletes instead of
  /// keeping; at most ``countCeiling``. Default 20.
  public var maxQuarantinedFiles: Int
  /// Deliveries after which a message that was never acknowledged goes to quarantine as a dead
  /// letter instead of being delivered again; nil (the default) means unlimited. 1 to
  /// ``countCeiling``.
  public var maxDeliveryAttempts: Int?

  /// The largest accepted ``claimTimeout``: 366 days (31,622,400 seconds). Recovery restores a
  /// claim whose lease ends further ahead than this, as a planted or corrupted name.
  public static let claimTimeoutCeiling: TimeInterval = 31_622_400

  /// The shortest accepted ``messageLifetime`` and ``claimTimeout``: 0.000001 seconds (1 µs),
  /// the unit of every time the mailbox stores (docs/FORMAT.md, "Names").
  public static let resolution: TimeInterval = 0.000_001

  /// How far ahead (microseconds) a lease must end to count as never given: the longest claim
  /// timeout plus one day, so a claim made with the ceiling a moment after a sweep read its
  /// clock (or by a process whose clock is a little ahead) is never taken for a forged one.
  static let forgedLeaseHorizonMicros = Int64(claimTimeoutCeiling + 86_400) * 1_000_000

  /// The largest accepted ``maxMessages``, ``maxQuarantinedFiles`` and
  /// ``maxDeliveryAttempts``: 8,999,999,999,999,999. The `settings` file stores them as JSON
  /// numbers, which every reader takes as a double and accepts only as a whole number below
  /// 9 * 10^15 (docs/FORMAT.md, "The settings file"), so a larger bound would make the mailbox
  /// unreadable to every later opener. Pass nil for an unlimited ``maxDeliveryAttempts``.
  public static let countCeiling = 8_999_999_999_999_999

  /// The largest accepted ``maxPayloadBytes``: 64 MiB.
  public static let payloadCeiling = 64 * 1024 * 1024

  /// Creates limits; units are messages, bytes and seconds. Nothing is checked until a mailbox
  /// is created with them (see ``validate()``).
  public init(
    maxMessages: Int = 100,
    maxPayloadBytes: Int = 65_536,
    messageLifetime: TimeInterval = 86_400,
    claimTimeout: TimeInterval = 600,
    maxQuarantinedFiles: Int = 20,
    maxDeliveryAttempts: Int? = nil
  ) {
    self.maxMessages = maxMessages
    self.maxPayloadBytes = maxPayloadBytes
    self.messageLifetime = messageLifetime
    self.claimTimeout = claimTimeout
    self.maxQuarantinedFiles = maxQuarantinedFiles
    self.maxDeliveryAttempts = maxDeliveryAttempts
  }

  /// Checks every bound.
  ///
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` with the first offending field's name
  ///   (`"maxMessages"`, `"maxPayloadBytes"`, `"messageLifetime"`, `"claimTimeout"`,
  ///   `"maxQuarantinedFiles"`, `"maxDeliveryAttempts"`).
  public func validate() throws {
    guard (1...Self.countCeiling).contains(maxMessages) else {
      throw AppGroupMailboxError.invalidLimit("maxMessages")
    }
    guard (1...Self.payloadCeiling).contains(maxPayloadBytes) else {
      throw AppGroupMailboxError.invalidLimit("maxPayloadBytes")
    }
    guard messageLifetime >= Self.resolution, messageLifetime.isFinite else {
      throw AppGroupMailboxError.invalidLimit("messageLifetime")
    }
    guard claimTimeout >= Self.resolution, claimTimeout <= Self.claimTimeoutCeiling else {
      throw AppGroupMailboxError.invalidLimit("claimTimeout")
    }
    guard (0...Self.countCeiling).contains(maxQuarantinedFiles) else {
      throw AppGroupMailboxError.invalidLimit("maxQuarantinedFiles")
    }
    if let attempts = maxDeliveryAttempts, !(1...Self.countCeiling).contains(attempts) {
      throw AppGroupMailboxError.invalidLimit("maxDeliveryAttempts")
    }
  }
}

/// What to do when an enqueue finds the mailbox full (``AppGroupMailbox/OverflowPolicy``).
public enum AppGroupMailboxOverflowPolicy: Sendable, Equatable, Hashable {
  /// Refuse the new message with ``AppGroupMailboxError/mailboxFull``; nothing is written.
  case rejectNewest
  /// Delete the oldest pending message of the lowest priority level (never a claimed one) and
  /// report ``AppGroupMailboxDiagnostic/oldestMessageDiscarded``. A message of a higher level
  /// than the new one's is never deleted: when every pending message is of a higher level, or
  /// every message is claimed or delayed, the enqueue fails with
  /// ``AppGroupMailboxError/mailboxFull``. A message file whose own inode flags refuse its
  /// delete (chattr(1) `+i`, `+a`) is passed over for the next; when such files leave too few to
  /// make the room, nothing is deleted and the enqueue fails with `mailboxFull`.
  case discardOldest
}

/// How hard an operation works to survive a power loss (a Linux addition).
public enum AppGroupMailboxDurability: Sendable, Equatable, Hashable {
  /// The default: a message file is flushed (fsync(2)) before it is renamed into place, and the
  /// destination directory is flushed before `enqueue`, `release` or a recovery returns, so a
  /// returned enqueue survives a crash or a power loss.
  case full
  /// Skips every flush. A process crash still loses nothing (the page cache survives it), but a
  /// power loss or kernel crash can lose messages whose enqueue returned, or leave a zero-length
  /// file under a message name (quarantined on the next claim). For caches and hints, not work.
  case relaxed
}

/// File modes the mailbox gives what it creates, whatever the process umask (a Linux addition).
public enum AppGroupMailboxPermissions: Sendable, Equatable, Hashable {
  /// The default: directories 0700, files 0600; only the owning user can use the mailbox.
  case `private`
  /// For a container shared by a Unix group: directories 02770 (setgid, so new entries inherit
  /// the directory's group), files 0660. Every user must be in the container's group.
  case groupShared

  var directoryMode: mode_t { self == .private ? 0o700 : 0o2770 }
  var fileMode: mode_t { self == .private ? 0o600 : 0o660 }
}
