public import Foundation

/// A bounded, durable, file-backed mailbox through which processes that share a directory pass
/// typed messages, at least once, oldest first within a priority level.
///
/// Each namespace is a directory `<container>/AppGroupMailbox/<namespace>/` (see docs/FORMAT.md).
/// A message is one file, published by an atomic rename; a consumer claims it by another rename,
/// so two consumers never hold the same message; ``Claim/acknowledge()`` deletes it and
/// ``Claim/release()`` puts it back at its original position. A claim whose holder died is
/// restored after ``Limits/claimTimeout``.
///
/// Thread and process safety: every member may be called from any thread, and any number of
/// processes may open the same namespace. Claims and acknowledges never wait for a lock;
/// enqueues, releases and maintenance hold the namespace's lock (flock(2) on its `state` file)
/// for a few system calls.
public final class AppGroupMailbox<Message: Codable & Sendable>: Sendable {
  /// Resource limits; see ``AppGroupMailboxLimits``.
  public typealias Limits = AppGroupMailboxLimits
  /// What to do when full; see ``AppGroupMailboxOverflowPolicy``.
  public typealias OverflowPolicy = AppGroupMailboxOverflowPolicy
  /// Content-free events; see ``AppGroupMailboxDiagnostic``.
  public typealias Diagnostic = AppGroupMailboxDiagnostic
  /// Retry delays; see ``AppGroupMailboxRetryPolicy``.
  public typealias RetryPolicy = AppGroupMailboxRetryPolicy
  /// Errors; see ``AppGroupMailboxError``.
  public typealias MailboxError = AppGroupMailboxError
  /// Flush policy; see ``AppGroupMailboxDurability``.
  public typealias Durability = AppGroupMailboxDurability
  /// File modes; see ``AppGroupMailboxPermissions``.
  public typealias Permissions = AppGroupMailboxPermissions

  /// The name posted to after each enqueue, release and recovery (see the watcher API).
  public let notificationName: String?
  /// The type tag stored with every message. Claims take messages with this tag or none; a
  /// message with another tag stays pending for a consumer of its type (with the default tag,
  /// old qualified tags of the same type name are taken too; see docs/FORMAT.md).
  public let messageType: String

  let spool: Spool
  /// `Message`'s payload version and the migrations registered from older ones.
  let payloadMigrations: PayloadMigrations<Message>
  let encoder = JSONEncoder()
  /// One decoder for every claim (making one costs more than a small message's decoding);
  /// JSONDecoder is Sendable (swift-foundation), so claims on several threads may share it.
  let decoder = JSONDecoder()

  /// Opens (creating if needed) the mailbox `namespace` inside `containerURL`.
  ///
  /// - Parameters:
  ///   - containerURL: The shared directory; created when missing.
  ///   - namespace: 1 to 64 bytes of `A-Z a-z 0-9 . _ -`, not all dots, not starting with `-`; case-sensitive.
  ///   - limits: Bounds, checked here. They become a new mailbox's stored settings (all but
  ///     `claimTimeout`, which stays this opener's); an existing mailbox keeps its stored
  ///     settings, which then apply, reported once by
  ///     ``Diagnostic/storedSettingsApplied(differingFields:)`` when they differ.
  ///   - overflowPolicy: What a full mailbox does with a new message (stored like `limits`).
  ///   - notificationName: A name consumers of several mailboxes can wait on together; posted
  ///     after each enqueue, release and recovery (see ``AppGroupMailboxWatcher`` and
  ///     docs/WAKEUPS.md).
  ///   - messageType: The tag stored with each message; defaults to
  ///     `String(describing: Message.self)`, the type's name without its module (`Job`), which
  ///     is the same in every module, launch and access level. Give one when two types of the
  ///     same name share a namespace. A tag that makes a message's header line longer than
  ///     4,096 bytes makes every enqueue throw ``MailboxError/encodingFailure`` (docs/FORMAT.md,
  ///     "Message files").
  ///   - diagnostic: Receives content-free events, outside every lock, on the calling thread.
  ///   - durability: Linux addition; ``Durability/full`` (the default) flushes before returning.
  ///   - permissions: Linux addition; ``Permissions/private`` (the default) or group-shared:
  ///     a new mailbox's sharing mode (stored like `limits`); nothing that exists changes mode.
  /// - Throws: ``MailboxError/invalidNamespace``, ``MailboxError/invalidLimit(_:)`` (also
  ///   `"notificationName"` when empty or longer than 255 bytes encoded, and `"settings: <why>"`
  ///   (a member's name, never its value) or `"settings format N"` for a settings file this
  ///   version cannot read, and
  ///   `"payloadVersion"` when `Message` declares a
  ///   ``AppGroupMailboxVersionedMessage/payloadVersion`` outside 1 ...
  ///   ``AppGroupMailboxPayloadVersions/maximum``),
  ///   ``MailboxError/containerUnavailable`` (a symlink, not a directory, or areas on different
  ///   filesystems), or ``MailboxError/ioFailure(_:)`` (operation `"open mailbox"`) naming the
  ///   system call and errno that failed, for example `EROFS`, `EACCES` or `ENAMETOOLONG`.
  ///   Nothing is created before the arguments are checked.
  public convenience init(
    containerURL: URL,
    namespace: String,
    limits: Limits = .init(),
    overflowPolicy: OverflowPolicy = .rejectNewest,
    notificationName: String? = nil,
    messageType: String? = nil,
    diagnostic: (@Sendable (Diagnostic) -> Void)? = nil,
    durability: Durability = .full,
    permissions: Permissions = .private
  ) throws {
    try self.init(
      containerURL: containerURL, namespace: namespace, limits: limits,
      overflowPolicy: overflowPolicy, notificationName: notificationName,
      messageType: messageType, diagnostic: diagnostic, durability: durability,
      permissions: permissions, clock: .system)
  }

  /// The designated initialiser; `clock` lets tests control time.
  init(
    containerURL: URL, namespace: String, limits: Limits, overflowPolicy: OverflowPolicy,
    notificationName: String?, messageType: String?,
    diagnostic: (@Sendable (Diagnostic) -> Void)?, durability: Durability,
    permissions: Permissions, clock: MailboxClock
  ) throws {
    guard NamespaceRule.isValid(namespace) else { throw MailboxError.invalidNamespace }
    try limits.validate()
    let version = AppGroupMailboxPayloadVersions.declared(by: Message.self)
    guard (1...AppGroupMailboxPayloadVersions.maximum).contains(version) else {
      throw MailboxError.invalidLimit("payloadVersion")
    }
    let versions = PayloadMigrations<Message>(current: version)
    self.payloadMigrations = versions
    let type = messageType ?? MessageTypeTag.defaultTag(of: Message.self)
    self.messageType = type
    self.notificationName = notificationName
    var onPending: (@Sendable () -> Void)?
    if let notificationName {
      let poster = NotificationPoster(
        file: try NotificationFile(
          containerPath: containerURL.path, name: notificationName, permissions: permissions))
      onPending = { poster.post() }
    }
    let configuration = SpoolConfiguration(
      limits: limits, overflowPolicy: overflowPolicy, durability: durability,
      permissions: permissions,
      messageTypeTag: MessageTypeTag(tag: type, isDefault: messageType == nil),
      payloadVersions: versions, clock: clock,
      diagnostic: diagnostic, onPending: onPending)
    self.spool = try Spool(
      container: containerURL, namespace: namespace, configuration: configuration)
  }

  /// Opens the mailbox `namespace` in the container of the app group `appGroupIdentifier`.
  ///
  /// The container is `$APP_GROUP_CONTAINER_ROOT/<identifier>` when that variable is set, else
  /// `$XDG_DATA_HOME/app-groups/<identifier>`, else `~/.local/share/app-groups/<identifier>`
  /// (XDG Base Directory Specification). See ``AppGroupContainer/url(forIdentifier:)``.
  ///
  /// - Throws: ``MailboxError/containerUnavailable`` for an invalid identifier, and whatever
  ///   ``init(containerURL:namespace:limits:overflowPolicy:notificationName:messageType:diagnostic:durability:permissions:)``
  ///   throws.
  public convenience init(
    appGroupIdentifier: String,
    namespace: String,
    limits: Limits = .init(),
    overflowPolicy: OverflowPolicy = .rejectNewest,
    notificationName: String? = nil,
    messageType: String? = nil,
    diagnostic: (@Sendable (Diagnostic) -> Void)? = nil,
    durability: Durability = .full,
    permissions: Permissions = .private
  ) throws {
    guard NamespaceRule.isValid(namespace) else { throw MailboxError.invalidNamespace }
    try self.init(
      containerURL: try AppGroupContainer.url(forIdentifier: appGroupIdentifier),
      namespace: namespace, limits: limits, overflowPolicy: overflowPolicy,
      notificationName: notificationName, messageType: messageType, diagnostic: diagnostic,
      durability: durability, permissions: permissions)
  }

  /// Adds a message under a fresh random id and returns the id.
  ///
  /// Its `enqueuedAt` is now, or the newest implicit `enqueuedAt` already recorded in this
  /// namespace if the clock stepped back, so insertion order holds. With ``Durability/full`` the
  /// message survives a crash or power loss once this returns.
  ///
  /// `priority` is the message's level (a Linux addition), ``AppGroupMailboxPriority/lowest``
  /// (0) to ``AppGroupMailboxPriority/highest`` (9), default ``AppGroupMailboxPriority/default``
  /// (5): claims take the highest level first and keep FIFO order within a level. Every enqueue
  /// of this type takes it the same way.
  /// - Throws: ``MailboxError/mailboxFull``, ``MailboxError/payloadTooLarge(actualBytes:maximumBytes:)``
  ///   (nothing written), ``MailboxError/encodingFailure``, ``MailboxError/ioFailure(_:)``;
  ///   ``MailboxError/invalidLimit(_:)`` naming `priority` and the range for a level outside 0
  ///   to 9 (nothing written).
  /// - Complexity: O(1) system calls; O(n) in the depth only when the depth counter says full.
  @discardableResult
  public func enqueue(_ message: Message, priority: Int = AppGroupMailboxPriority.default) throws
    -> UUID
  {
    try enqueue(
      message, id: KernelRandom.messageID(), explicitMicros: nil, unique: false, priority: priority)
  }

  /// Adds a message with a caller-chosen id, writing nothing while a message with that id is
  /// pending, delayed, claimed or quarantined (also when processes race). Returns `id` either
  /// way.
  ///
  /// An id that was acknowledged (or expired, or discarded) is gone: the mailbox keeps no
  /// tombstones, so enqueueing it again adds it again.
  /// - Throws: as ``enqueue(_:priority:)``.
  /// - Complexity: O(n) in the entries of the namespace (the duplicate check reads names only).
  @discardableResult
  public func enqueue(
    _ message: Message, id: UUID, priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try enqueue(message, id: id, explicitMicros: nil, unique: true, priority: priority)
  }

  /// Imports a message at its original position: ordered by `enqueuedAt` as given (to the
  /// microsecond), equal dates in insertion order; writes nothing while `id` is pending,
  /// delayed, claimed or quarantined. `messageLifetime` counts from `enqueuedAt`: a message
  /// already that old is not written (it expired;
  /// ``AppGroupMailboxDiagnostic/expiredMessageRemoved`` is reported). An explicit
  /// date never moves the clock later enqueues without a date use (docs/FORMAT.md, the state
  /// file).
  /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `enqueuedAt` and the accepted range
  ///   when `enqueuedAt` lies outside ``AppGroupRawMailbox/representableDates`` (1970 to 2286) or
  ///   is NaN (nothing written); otherwise as ``enqueue(_:priority:)``.
  /// - Complexity: as ``enqueue(_:id:priority:)``.
  @discardableResult
  public func enqueue(
    _ message: Message, id: UUID, enqueuedAt: Date, priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try enqueue(
      message, id: id, explicitMicros: try TimeValue.micros(enqueuedAt, parameter: "enqueuedAt"),
      unique: true, priority: priority)
  }

  /// The one enqueue every public variant calls; `due` nil (or not in the future) publishes to
  /// `pending/`. The due time is checked first, then the priority level, then the encoding.
  func enqueue(
    _ message: Message, id: UUID, explicitMicros: Int64?, unique: Bool, due: DueTime? = nil,
    priority: Int
  ) throws -> UUID {
    let notBeforeMicros = try due?.micros(now: spool.now)
    let level = try AppGroupMailboxPriority.validated(priority)
    let payload: Data
    do {
      payload = try encoder.encode(message)
    } catch {
      throw MailboxError.encodingFailure
    }
    var diagnostics: [Diagnostic] = []
    defer { spool.emit(diagnostics) }
    try spool.sweepIfDue(diagnostics: &diagnostics)
    let outcome = try spool.enqueue(
      payload: payload, id: id, messageType: messageType, payloadVersion: payloadVersion,
      explicitMicros: explicitMicros, unique: unique, notBeforeMicros: notBeforeMicros,
      level: level, diagnostics: &diagnostics)
    if case .published = outcome { spool.configuration.onPending?() }
    return id
  }

  /// Claims up to `limit` pending messages (all when nil): the highest priority level first
  /// (``enqueue(_:priority:)``), oldest first within a level.
  ///
  /// Each claim is an atomic rename, so no other consumer holds the same message until this
  /// claim is acknowledged, released, or abandoned past ``Limits/claimTimeout``. Abandoned claims
  /// are recovered first; expired messages are deleted; hostile or undecodable files, entries
  /// under foreign names and dead letters (``Limits/maxDeliveryAttempts``) are quarantined and
  /// reported and do not count toward `limit`, so up to `limit` valid claims are returned whatever
  /// sits in front of them. Nothing is read before its descriptor was checked (docs/SECURITY.md).
  /// A message of ``payloadVersion`` is decoded as `Message`, one of an older version through its
  /// migration (``registerMigration(from:_:)``; a migration that throws quarantines it as
  /// malformed); a message of any other payload version is passed over and left pending, as a
  /// message of another type is (docs/FORMAT.md, "Payload versions"). A passed-over message is
  /// not renamed again while its name holds the file that was read; another file under the name
  /// (a keyed replacement) is read (docs/FORMAT.md, "Keys").
  ///
  /// A `limit` of 0 returns `[]` and touches nothing (as the package we follow does).
  /// - Throws: ``MailboxError/invalidLimit(_:)`` (`"claim limit"`) when `limit` < 0;
  ///   ``MailboxError/mailboxDirectoryRemoved`` when the namespace directory or one of its
  ///   areas was deleted (a call that claims nothing checks, with an fstat(2) of each);
  ///   ``MailboxError/ioFailure(_:)`` when the first message cannot be claimed. A failure after
  ///   some messages were claimed (a full disk that lets `claimed/` grow no more) returns those
  ///   claims instead, so none waits out its lease undelivered; the next call meets the error.
  /// - Complexity: O(log n) per entry looked at, plus one fstatat(2), one rename and one read
  ///   per claimed message: names come from an in-memory index kept by inotify (one watch per
  ///   mailbox after its first claim, on the process's one inotify instance). A listing and sort of the pending area,
  ///   O(n log n), happens on the first claim and whenever the index cannot be trusted (queue
  ///   overflow, no inotify, a foreign name, a failed claim). A message passed over as another
  ///   type's costs one lstat(2) on the claim after a name with its id arrived, and after each
  ///   such listing. See docs/PERFORMANCE.md.
  public func claimPending(limit: Int? = nil) throws -> [Claim] {
    var claims: [Claim] = []
    try spool.claimPending(limit: limit) { raw in
      do {
        let message = try payloadMigrations.decode(
          raw.payload, version: raw.header.declaredPayloadVersion, decoder: decoder)
        claims.append(Claim(raw: raw, message: message, mailbox: self))
        return true
      } catch {
        return false
      }
    }
    return claims
  }

}
