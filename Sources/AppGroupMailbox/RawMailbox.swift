public import Foundation

/// An untyped mailbox: the same spool, protocol and guarantees as ``AppGroupMailbox``, but
/// messages are raw JSON bytes (a Linux addition, used by `mailboxctl` and by tools that relay
/// messages without knowing their Swift type).
///
/// A message enqueued here with an empty type is taken by whichever typed consumer claims it
/// first, and quarantined (as malformed) by one whose `Message` does not decode it: give it a
/// `messageType` when consumers of several types share the namespace. A consumer here accepts
/// messages of every type. Thread and process safety as ``AppGroupMailbox``.
public final class AppGroupRawMailbox: Sendable {
  /// Resource limits; see ``AppGroupMailboxLimits``.
  public typealias Limits = AppGroupMailboxLimits

  /// What an enqueue did.
  public struct Receipt: Sendable, Equatable, Hashable {
    /// The message id (the caller's, or a fresh random one).
    public var id: UUID
    /// True when a message with this id was already pending, delayed, claimed or quarantined,
    /// so nothing was written.
    public var wasAlreadyPresent: Bool
    /// When the message becomes claimable, if it was written to `delayed/` (a not-before time in
    /// the future; see ``AppGroupRawMailbox/enqueue(_:id:enqueuedAt:notBefore:messageType:payloadVersion:priority:)``);
    /// nil when it was published pending or nothing was written.
    public var notBefore: Date?
    /// True when its not-before time lay past its ``AppGroupMailboxLimits/messageLifetime``, or
    /// its explicit `enqueuedAt` was already that old: it expired at once and nothing was
    /// written (``AppGroupMailboxDiagnostic/expiredMessageRemoved``).
    public var expiredBeforeDue: Bool

    /// Creates a receipt.
    public init(
      id: UUID, wasAlreadyPresent: Bool, notBefore: Date? = nil, expiredBeforeDue: Bool = false
    ) {
      self.id = id
      self.wasAlreadyPresent = wasAlreadyPresent
      self.notBefore = notBefore
      self.expiredBeforeDue = expiredBeforeDue
    }
  }

  /// The namespace name.
  public let namespace: String

  let spool: Spool

  /// Opens (creating if needed) the mailbox `namespace` inside `containerURL`.
  ///
  /// Parameters and errors as
  /// ``AppGroupMailbox/init(containerURL:namespace:limits:overflowPolicy:notificationName:messageType:diagnostic:durability:permissions:)``,
  /// without a message type: claims accept every type.
  public convenience init(
    containerURL: URL,
    namespace: String,
    limits: Limits = .init(),
    overflowPolicy: AppGroupMailboxOverflowPolicy = .rejectNewest,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil,
    durability: AppGroupMailboxDurability = .full,
    permissions: AppGroupMailboxPermissions = .private
  ) throws {
    try self.init(
      containerURL: containerURL, namespace: namespace, limits: limits,
      overflowPolicy: overflowPolicy, diagnostic: diagnostic, durability: durability,
      permissions: permissions, clock: .system)
  }

  /// The designated initialiser; `clock` lets tests control time.
  init(
    containerURL: URL, namespace: String, limits: Limits,
    overflowPolicy: AppGroupMailboxOverflowPolicy,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?,
    durability: AppGroupMailboxDurability, permissions: AppGroupMailboxPermissions,
    clock: MailboxClock
  ) throws {
    guard NamespaceRule.isValid(namespace) else { throw AppGroupMailboxError.invalidNamespace }
    try limits.validate()
    self.namespace = namespace
    let configuration = SpoolConfiguration(
      limits: limits, overflowPolicy: overflowPolicy, durability: durability,
      permissions: permissions, messageTypeTag: nil, clock: clock,
      diagnostic: diagnostic, onPending: nil)
    self.spool = try Spool(
      container: containerURL, namespace: namespace, configuration: configuration)
  }

  /// Checks, without writing anything, that `payload` could be enqueued: it is one JSON value
  /// (RFC 8259; any top-level value) as UTF-8 text without a byte order mark (RFC 8259 section
  /// 8.1: what JSON Lines readers such as `mailboxctl drain`'s consumers expect) and the message
  /// file would fit ``Limits/maxPayloadBytes``, with `messageType`, `payloadVersion` and `key`
  /// (as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)`` and, for `key`,
  /// ``enqueue(_:key:onConflict:messageType:payloadVersion:priority:)`` would record them, and
  /// the key by its rule).
  ///
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `payloadVersion` and the range
  ///   for a version outside 1 ... ``AppGroupMailboxPayloadVersions/maximum``, or naming `key`
  ///   and its rule for a key that breaks it (1 to 128 bytes of `A-Z a-z 0-9 . _ - :`, not
  ///   starting with `.`);
  ///   ``AppGroupMailboxError/decodingFailure`` when `payload` is not JSON by the
  ///   grammar of RFC 8259 (a trailing comma in an array or object, which Foundation's parsers
  ///   accept, is refused; see ``JSONSyntax``), not UTF-8 (JSONSerialization alone would also
  ///   take UTF-16 and UTF-32) or starts with a byte order mark;
  ///   ``AppGroupMailboxError/payloadTooLarge(actualBytes:maximumBytes:)``.
  /// - Complexity: O(n) in the payload bytes.
  public func validate(
    _ payload: Data, id: UUID? = nil, messageType: String = "", payloadVersion: Int = 1,
    key: String? = nil
  ) throws {
    try Self.validate(
      payload, limits: limits, id: id, messageType: messageType, payloadVersion: payloadVersion,
      key: key)
  }

  /// ``validate(_:id:messageType:payloadVersion:key:)`` against `limits` instead of an open
  /// mailbox's: for a caller that checks its input before it creates the mailbox (`mailboxctl
  /// enqueue` into a mailbox that is not there yet), so input it refuses leaves nothing behind.
  /// Thread-safe; touches no file.
  /// - Throws: what ``validate(_:id:messageType:payloadVersion:key:)`` throws, with
  ///   `limits.maxPayloadBytes` as the bound.
  /// - Complexity: O(n) in the payload bytes.
  public static func validate(
    _ payload: Data, limits: AppGroupMailboxLimits, id: UUID? = nil, messageType: String = "",
    payloadVersion: Int = 1, key: String? = nil
  ) throws {
    let version = try AppGroupMailboxPayloadVersions.validated(payloadVersion)
    if let key, !KeyRequest.isValid(key) { throw KeyRequest.invalid }
    guard isJSON(payload) else { throw AppGroupMailboxError.decodingFailure }
    let file: Data
    do {
      file = try Envelope.encode(
        id: id ?? KernelRandom.messageID(), enqueuedAt: MessageKey.maxMicros,
        messageType: messageType, key: key,
        payloadVersion: version, payload: payload)
    } catch {
      throw AppGroupMailboxError.encodingFailure
    }
    guard file.count <= limits.maxPayloadBytes else {
      throw AppGroupMailboxError.payloadTooLarge(
        actualBytes: file.count, maximumBytes: limits.maxPayloadBytes)
    }
  }

  /// Adds one message whose encoded JSON is `payload`.
  ///
  /// - Parameters:
  ///   - payload: One JSON value in UTF-8 without a byte order mark, stored byte for byte.
  ///   - id: A caller-chosen id: nothing is written while a message with it is pending, delayed,
  ///     claimed or quarantined (as ``AppGroupMailbox/enqueue(_:id:priority:)``). Nil means a fresh random
  ///     id.
  ///   - enqueuedAt: Places the message by this date (as
  ///     ``AppGroupMailbox/enqueue(_:id:enqueuedAt:priority:)``); nil means now, clamped so insertion
  ///     order holds. A date outside ``representableDates`` or NaN is refused with
  ///     ``AppGroupMailboxError/invalidLimit(_:)`` naming `enqueuedAt` and the range.
  ///   - messageType: The stored type tag; empty (the default) is untyped and accepted by every
  ///     consumer. The message's header line (id, time, tag, key, version as JSON) must fit in
  ///     4,096 bytes, which readers look at (docs/FORMAT.md, "Message files"): a tag that makes
  ///     it longer (about 3,900 bytes of printable ASCII; control characters count 6 bytes
  ///     each, escaped) is refused with ``AppGroupMailboxError/encodingFailure``.
  ///   - payloadVersion: The version of the message's encoded form recorded with it, 1 (the
  ///     default) to ``AppGroupMailboxPayloadVersions/maximum``: a typed consumer decodes it only
  ///     when that is its own ``AppGroupMailboxVersionedMessage/payloadVersion`` or one it has a
  ///     migration for, and passes over it otherwise (docs/FORMAT.md, "Payload versions"). Any
  ///     other value is refused with ``AppGroupMailboxError/invalidLimit(_:)`` naming
  ///     `payloadVersion` and the range, nothing written.
  ///   - priority: The message's level, ``AppGroupMailboxPriority/lowest`` (0) to
  ///     ``AppGroupMailboxPriority/highest`` (9); claims take higher levels first, FIFO within a
  ///     level. The default is ``AppGroupMailboxPriority/default`` (5).
  /// - Throws: ``AppGroupMailboxError/decodingFailure`` when `payload` is not JSON, not UTF-8 or
  ///   starts with a byte order mark (nothing written, as ``validate(_:id:messageType:payloadVersion:key:)``);
  ///   ``AppGroupMailboxError/invalidLimit(_:)`` naming `priority` and the range for a level
  ///   outside 0 to 9, or `payloadVersion` outside its range (nothing written); the errors of ``AppGroupMailbox/enqueue(_:priority:)``.
  /// - Complexity: as ``AppGroupMailbox/enqueue(_:id:priority:)`` when `id` is given, else O(1) system
  ///   calls; O(n) in the payload bytes for the JSON check.
  @discardableResult
  public func enqueue(
    _ payload: Data, id: UUID? = nil, enqueuedAt: Date? = nil, messageType: String = "",
    payloadVersion: Int = 1, priority: Int = AppGroupMailboxPriority.default
  ) throws -> Receipt {
    try enqueue(
      payload, id: id, enqueuedAt: enqueuedAt, due: nil, messageType: messageType,
      payloadVersion: payloadVersion, priority: priority)
  }

  /// The one enqueue every public variant calls; `due` nil (or not in the future) publishes to
  /// `pending/`. The due time is checked first, then the priority level, the payload version,
  /// then the payload.
  func enqueue(
    _ payload: Data, id: UUID?, enqueuedAt: Date?, due: DueTime?, messageType: String,
    payloadVersion: Int, priority: Int
  ) throws -> Receipt {
    let notBeforeMicros = try due?.micros(now: spool.now)
    let level = try AppGroupMailboxPriority.validated(priority)
    let version = try AppGroupMailboxPayloadVersions.validated(payloadVersion)
    guard Self.isJSON(payload) else { throw AppGroupMailboxError.decodingFailure }
    let messageID = id ?? KernelRandom.messageID()
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    defer { spool.emit(diagnostics) }
    try spool.sweepIfDue(diagnostics: &diagnostics)
    let outcome = try spool.enqueue(
      payload: payload, id: messageID, messageType: messageType, payloadVersion: version,
      explicitMicros: try enqueuedAt.map { try TimeValue.micros($0, parameter: "enqueuedAt") },
      unique: id != nil, notBeforeMicros: notBeforeMicros, level: level,
      diagnostics: &diagnostics)
    switch outcome {
    case .published:
      spool.configuration.onPending?()
      return Receipt(id: messageID, wasAlreadyPresent: false)
    case .delayed(let name):
      return Receipt(
        id: messageID, wasAlreadyPresent: false, notBefore: Date(mailboxMicros: name.key.micros))
    case .duplicate:
      return Receipt(id: messageID, wasAlreadyPresent: true)
    case .expired:
      return Receipt(id: messageID, wasAlreadyPresent: false, expiredBeforeDue: true)
    case .kept(let holder):  // keyed enqueues only (RawMailbox+Key.swift)
      return Receipt(id: holder, wasAlreadyPresent: true)
    case .replaced(let name):
      return Receipt(id: name.id, wasAlreadyPresent: true)
    }
  }

  /// Claims up to `limit` pending messages (all when nil), the highest priority level first and
  /// oldest first within a level, as
  /// ``AppGroupMailbox/claimPending(limit:)`` does; a file whose message is not JSON is
  /// quarantined as malformed. Delayed messages that are due are made pending first.
  ///
  /// A `limit` of 0 returns `[]` and touches nothing.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"claim limit"`) when `limit` < 0;
  ///   ``AppGroupMailboxError/mailboxDirectoryRemoved`` when the namespace was deleted (as
  ///   ``AppGroupMailbox/claimPending(limit:)``);
  ///   ``AppGroupMailboxError/ioFailure(_:)`` when the first message cannot be claimed (after
  ///   that, the claims made are returned, as ``AppGroupMailbox/claimPending(limit:)`` says).
  /// - Complexity: as ``AppGroupMailbox/claimPending(limit:)``: O(log n) per entry looked at
  ///   from the inotify-fed index, plus one rename and one read per claimed message; a listing
  ///   and sort of the pending area, O(n log n), on the first claim and whenever the index
  ///   cannot be trusted.
  public func claimPending(limit: Int? = nil) throws -> [Claim] {
    try claimPending(limit: limit, passingOver: [])
  }

  /// ``claimPending(limit:)``, leaving the pending messages whose id is in `passingOver` where
  /// they are, unread (for `mailboxctl drain`, which tries every other message before it takes
  /// again one its handler asked to retry).
  package func claimPending(limit: Int?, passingOver: Set<UUID>) throws -> [Claim] {
    var claims: [Claim] = []
    try spool.claimPending(limit: limit, passingOver: passingOver) { raw in
      guard Self.isJSON(raw.payload) else { return false }
      claims.append(Claim(raw: raw, mailbox: self))
      return true
    }
    return claims
  }

  /// Where the JSON check (``isJSON(_:)``) stops reading `data` that is not one JSON value
  /// (``JSONSyntax/stopOffset(_:)``): for `mailboxctl` to say where a message goes wrong.
  package static func jsonStopOffset(_ data: Data) -> Int? {
    data.withUnsafeBytes(JSONSyntax.stopOffset)
  }

  /// Whether `data` is a message of an untyped mailbox: one JSON value by the grammar of
  /// RFC 8259 in UTF-8 text (no NUL byte, which UTF-8 JSON never holds but UTF-16 and UTF-32
  /// do; no byte order mark; no trailing comma, which Foundation's parsers accept), which
  /// JSONSerialization also accepts (it decides what the grammar leaves to a parser: a lone
  /// surrogate escape, a number past a double's range, nesting past 512). Enqueue refuses, and
  /// an untyped claim quarantines as malformed, anything else: the same judgement on both sides
  /// and in interop/python (`is_json`), and `mailboxctl drain` can embed every message it
  /// delivers in its UTF-8 output line as it is (docs/FORMAT.md, "Message files").
  /// - Complexity: O(n) in the bytes; one pass and no allocation for valid UTF-8 JSON
  ///   (``JSONSyntax``).
  static func isJSON(_ data: Data) -> Bool {
    switch data.withUnsafeBytes(JSONSyntax.verdict) {
    case .valid: return true
    case .invalid: return false
    case .unsure:
      return (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
    }
  }
}
