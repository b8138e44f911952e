public import Foundation
import Glibc

/// Why a mailbox operation failed (``AppGroupMailbox/MailboxError``). No case, and no
/// description, contains message contents.
public enum AppGroupMailboxError: Error, Sendable, Equatable, Hashable, LocalizedError {
  /// The namespace is not 1 to 64 bytes of `A-Z a-z 0-9 . _ -`, is all dots, or starts with `-`.
  case invalidNamespace
  /// A limit or argument is out of range; the associated value names it (for example
  /// `"maxMessages"` or `"claim limit"`).
  case invalidLimit(String)
  /// The container or a mailbox directory cannot be opened or created, is a symlink, or spans
  /// mounts; the ``IOFailure`` names the check or system call that refused it and its errno
  /// (`ELOOP` for a symlink, `ENOTDIR` or `EEXIST` for an entry that is not a directory, `EXDEV`
  /// for an area on another filesystem, bind mount or btrfs subvolume, `EINVAL` for an invalid
  /// app group identifier or a `state` that is not a regular file with one link; `EISDIR` or
  /// `ENXIO` for a `state` that is a directory or a socket).
  ///
  /// As with ``ioFailure(_:)``, code written for the package we follow (whose
  /// `containerUnavailable` has no payload) works unchanged: `case .containerUnavailable:`
  /// matches every cause, and `error == .containerUnavailable` compares against the static
  /// ``containerUnavailable`` because equality ignores the cause.
  case containerUnavailable(IOFailure)
  /// The mailbox holds ``AppGroupMailboxLimits/maxMessages`` messages and the policy rejects
  /// the new one.
  case mailboxFull
  /// The encoded message file would be `actualBytes` long, more than `maximumBytes`.
  case payloadTooLarge(actualBytes: Int, maximumBytes: Int)
  /// A file failed a safety check (kept for compatibility; the Linux mailbox quarantines such
  /// files instead of throwing).
  case unsafeFile
  /// The claim was acknowledged, released, or recovered after its lease ran out; the caller no
  /// longer holds it and nothing was changed.
  case claimNoLongerExists
  /// The mailbox that made the claim has been deallocated.
  case mailboxDeallocated
  /// The insertion sequence is exhausted (kept for compatibility): on Linux only while a message
  /// whose name holds the last sequence, 2^63 - 1, is in the mailbox (a name planted or renamed
  /// by hand; 9.2 * 10^18 enqueues would be needed otherwise).
  case ordinalExhausted
  /// A file-system operation failed; the ``IOFailure`` names the operation, the system call
  /// and its errno.
  ///
  /// The package we follow has a payload-free `ioFailure`; code written for it works unchanged:
  /// `catch MailboxError.ioFailure` and `case .ioFailure:` match every I/O failure, and
  /// `error == .ioFailure` or `#expect(throws: MailboxError.ioFailure)` compare against
  /// ``ioFailure`` (the static value), because equality ignores the cause (see ``==(_:_:)``).
  /// Read the cause with `catch MailboxError.ioFailure(let cause)`.
  case ioFailure(IOFailure)
  /// `JSONEncoder` could not encode the message.
  case encodingFailure
  /// A message could not be decoded (the file is quarantined; this is thrown only where a
  /// caller asked for one message).
  case decodingFailure
  /// The namespace directory (or its `pending/` area) this mailbox opened was deleted, moved or
  /// replaced while a watcher waited on it, or it or one of its areas was deleted before a claim,
  /// a `drain` or an enqueue used it; open the mailbox again (a Linux addition).
  case mailboxDirectoryRemoved

  /// The cause of an ``AppGroupMailboxError/ioFailure(_:)``: never file contents or message
  /// bytes.
  public struct IOFailure: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The mailbox operation, for example `"enqueue"` or `"acknowledge"`.
    public var operation: String
    /// The failing system call, for example `"fsync"` or `"renameat2"`.
    public var systemCall: String
    /// The errno value (errno(3)), for example 28 for `ENOSPC`.
    public var errno: Int32
    /// What the path the call was made on is to the mailbox, for example `"pending area"`,
    /// `"settings file"` or `"namespace directory"`; empty when unknown. Never a path or a
    /// file's contents.
    public var role: String

    /// The cause of the static ``AppGroupMailboxError/ioFailure`` and
    /// ``AppGroupMailboxError/containerUnavailable``: no operation, no system call, errno 0. The
    /// library never throws it.
    public static let unspecified = IOFailure(operation: "", systemCall: "", errno: 0)

    /// Creates a cause; `role` is empty when unknown.
    public init(operation: String, systemCall: String, errno: Int32, role: String = "") {
      self.operation = operation
      self.systemCall = systemCall
      self.errno = errno
      self.role = role
    }

    /// `"<operation>: "` and ``failure``, for example `"enqueue: fsync on the pending area
    /// failed: Input/output error (errno 5)"`, or `"unspecified"` for ``unspecified``.
    public var description: String {
      guard self != .unspecified else { return "unspecified" }
      return "\(operation): \(failure)"
    }

    /// `"<systemCall> on the <role> failed: <strerror> (errno <n>)"`: the cause without the
    /// operation, for a sentence that names the operation itself. Without a system call (a check
    /// the library made itself on what its calls returned, such as the mount check of an area)
    /// `"the <role> was refused: <strerror> (errno <n>)"`, or only `"<strerror> (errno <n>)"`
    /// without a role either. A wait for the namespace lock that the program gave up (`flock`
    /// with `EINTR`: the library retries a wait a signal only interrupted) says so: `"gave up
    /// waiting for the mailbox's lock (the flock(2) on its state file), which another process
    /// holds"`. What the operation did before it needed the lock stays done (a claim has
    /// already deleted the expired messages it met, a dead letter is already in quarantine).
    public var failure: String {
      if systemCall == "flock", Errno(rawValue: errno) == .interrupted {
        let on = role.isEmpty ? "" : " on its \(role)"
        return "gave up waiting for the mailbox's lock (the flock(2)\(on)), which another "
          + "process holds"
      }
      let explanation = Errno(rawValue: errno).explanation
      switch (systemCall.isEmpty, role.isEmpty) {
      case (false, false): return "\(systemCall) on the \(role) failed: \(explanation)"
      case (false, true): return "\(systemCall) failed: \(explanation)"
      case (true, false): return "the \(role) was refused: \(explanation)"
      case (true, true): return explanation
      }
    }

    /// The name of the namespace directory's own entry the failure is about, when ``role`` is
    /// one: `"tmp"`, `"pending"`, `"claimed"`, `"quarantine"`, `"delayed"`, `"keys"`, `"state"`
    /// or `"settings"` (docs/FORMAT.md, "Layout"); nil for any other role (a message file, a
    /// directory above the namespace, a call between two directories) or none. For a tool
    /// that looks at the entry to say what stands there.
    public var entry: String? { PathRole(rawValue: role)?.entryName }
  }

  /// An I/O failure without a known cause, for comparisons written for the package we follow:
  /// `error == .ioFailure` is true for every ``ioFailure(_:)``, whatever its cause.
  public static var ioFailure: Self { .ioFailure(.unspecified) }

  /// An unavailable container without a known cause, for comparisons written for the package we
  /// follow: `error == .containerUnavailable` is true for every ``containerUnavailable(_:)``.
  public static var containerUnavailable: Self { .containerUnavailable(.unspecified) }

  /// The cause of an ``ioFailure(_:)``, nil for every other case: what to compare when the
  /// cause matters (`==` ignores it).
  public var ioFailureCause: IOFailure? {
    guard case .ioFailure(let cause) = self else { return nil }
    return cause
  }

  /// The cause of a ``containerUnavailable(_:)``, nil for every other case.
  public var containerUnavailableCause: IOFailure? {
    guard case .containerUnavailable(let cause) = self else { return nil }
    return cause
  }

  /// Equal when the cases are equal and so are their associated values, except that every
  /// ``ioFailure(_:)`` equals every other, and so does every ``containerUnavailable(_:)``: the
  /// cause is a diagnosis, not part of the error's identity, so comparisons written for the package we follow (whose `ioFailure` has no
  /// payload) behave as they did there. Compare ``IOFailure`` values to tell causes apart.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    switch (lhs, rhs) {
    case (.ioFailure, .ioFailure), (.containerUnavailable, .containerUnavailable): true
    case (.invalidLimit(let left), .invalidLimit(let right)): left == right
    case (
      .payloadTooLarge(let leftActual, let leftMaximum), .payloadTooLarge(let actual, let maximum)
    ):
      leftActual == actual && leftMaximum == maximum
    case (.invalidNamespace, .invalidNamespace), (.mailboxFull, .mailboxFull),
      (.unsafeFile, .unsafeFile),
      (.claimNoLongerExists, .claimNoLongerExists), (.mailboxDeallocated, .mailboxDeallocated),
      (.ordinalExhausted, .ordinalExhausted), (.encodingFailure, .encodingFailure),
      (.decodingFailure, .decodingFailure), (.mailboxDirectoryRemoved, .mailboxDirectoryRemoved):
      true
    default: false
    }
  }

  /// Hashes consistently with ``==(_:_:)``: the cause of an ``ioFailure(_:)`` or a
  /// ``containerUnavailable(_:)`` is not hashed.
  public func hash(into hasher: inout Hasher) {
    switch self {
    case .ioFailure: hasher.combine("ioFailure")
    case .containerUnavailable: hasher.combine("containerUnavailable")
    case .invalidLimit(let name): hasher.combine("invalidLimit"); hasher.combine(name)
    case .payloadTooLarge(let actual, let maximum):
      hasher.combine("payloadTooLarge")
      hasher.combine(actual)
      hasher.combine(maximum)
    default: hasher.combine(String(describing: self))
    }
  }

  /// A sentence for people; names fields and causes, never contents.
  public var errorDescription: String? {
    switch self {
    case .invalidNamespace:
      "The mailbox namespace is invalid: use 1 to 64 bytes of A-Z a-z 0-9 . _ -, not starting "
        + "with - and not only dots."
    case .invalidLimit(let name): "The value of '\(name)' is out of range or invalid."
    case .containerUnavailable(let cause):
      cause == .unspecified
        ? "The mailbox container is unavailable."
        : "The mailbox container is unavailable: \(cause)."
    case .mailboxFull:
      "The mailbox is full (its maxMessages bound): wait for consumers, raise maxMessages, or "
        + "use the discardOldest overflow policy."
    case .payloadTooLarge(let actual, let maximum):
      "The encoded message is \(actual) bytes, which exceeds the limit of \(maximum) bytes."
    case .unsafeFile: "A mailbox file failed safety checks."
    case .claimNoLongerExists: "The claim no longer exists."
    case .mailboxDeallocated:
      "The mailbox has been deallocated; keep a reference to the mailbox while you hold its "
        + "claims."
    case .ordinalExhausted:
      "The mailbox ordinal space is exhausted: a message with the last insertion sequence is in "
        + "the mailbox (a file planted or renamed by hand); enqueues work again once it is gone."
    case .ioFailure(let cause): "A mailbox file operation failed: \(cause)."
    case .encodingFailure: "Encoding the message failed."
    case .decodingFailure: "Decoding the message failed."
    case .mailboxDirectoryRemoved:
      "The mailbox directory was deleted, moved or replaced; open the mailbox again."
    }
  }
}

extension SystemCallError {
  /// The public error for this failure during `operation`.
  func mailboxError(_ operation: String) -> AppGroupMailboxError {
    .ioFailure(cause(operation))
  }

  /// The public cause of this failure during `operation`.
  func cause(_ operation: String) -> AppGroupMailboxError.IOFailure {
    .init(
      operation: operation, systemCall: call, errno: errno.rawValue, role: roleDescription)
  }
}
