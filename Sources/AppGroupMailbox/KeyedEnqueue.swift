public import Foundation

/// What a keyed enqueue does when a pending message already has its key (a Linux addition). A
/// pending message that will never be delivered (past its lifetime, or claimed
/// ``AppGroupMailboxLimits/maxDeliveryAttempts`` times) does not count: the enqueue deletes or
/// dead-letters it, as a claim would, and the new message is enqueued as any other.
public enum AppGroupMailboxKeyPolicy: String, Sendable, Equatable, Hashable, CaseIterable {
  /// The pending message stays; the new one is not written.
  case keep
  /// The new message takes the pending one's place atomically: the pending message's file is
  /// swapped for the new one under the same name, so the key never has zero or two pending
  /// messages, and the new message keeps the pending one's id, position in line, lifetime
  /// (counted from the name's `enqueuedAt`) and delivery count. A typed consumer that had
  /// passed over the pending message as another type's (or payload version) reads the new one
  /// on its next claim, and its `wait(timeout:)` returns for it (docs/FORMAT.md, "Keys").
  case replace
}

/// What a keyed enqueue did (a Linux addition).
public enum AppGroupMailboxKeyedOutcome: Sendable, Equatable, Hashable {
  /// No pending message had the key: the message was enqueued under this new id.
  case enqueued(UUID)
  /// ``AppGroupMailboxKeyPolicy/keep``: the pending message with this id has the key and stays;
  /// nothing was written.
  case kept(UUID)
  /// ``AppGroupMailboxKeyPolicy/replace``: the pending message with this id now holds the new
  /// message. Where the filesystem cannot swap two names (no `RENAME_EXCHANGE`), the new
  /// message was published under this new id and the old one deleted after it (docs/FORMAT.md,
  /// "Keys").
  case replaced(UUID)

  /// The id of the message pending with the key after the enqueue.
  public var id: UUID {
    switch self {
    case .enqueued(let id), .kept(let id), .replaced(let id): id
    }
  }
}

extension AppGroupRawMailbox {
  /// Adds `payload` under `key` so that at most one pending message has the key (for example a
  /// "refresh widget" request that coalesces into one); `onConflict` says what happens when
  /// one already does.
  ///
  /// Decided under the namespace lock, so producers in any process racing on one key leave
  /// exactly one pending message with it. Only `pending/` counts: a claimed message with the
  /// key is not touched (the new one is enqueued and waits behind it), nor is one waiting in
  /// `delayed/` after a release with a delay; such a message back in `pending/` (released,
  /// recovered, due) is a second pending message with the key until a claim takes one. The
  /// key is stored in the message's header and in the namespace's `keys/` index
  /// (docs/FORMAT.md, "Keys"); consumers see keyed messages as any other. Keys belong to the
  /// namespace, not to a type: a pending message of another type with the key is replaced or
  /// kept alike (prefix keys per type when types share a namespace).
  /// - Parameters:
  ///   - payload: One JSON value in UTF-8, stored byte for byte.
  ///   - key: 1 to 128 bytes of `A-Z a-z 0-9 . _ - :`, not starting with `.`.
  ///   - onConflict: ``AppGroupMailboxKeyPolicy/keep`` or ``AppGroupMailboxKeyPolicy/replace``.
  ///   - messageType: The stored type tag; empty (the default) is untyped.
  ///   - payloadVersion: The version of the message's encoded form recorded with it, 1 (the
  ///     default) to ``AppGroupMailboxPayloadVersions/maximum``: a typed consumer decodes it only
  ///     when that is its own ``AppGroupMailboxVersionedMessage/payloadVersion`` or one it has a
  ///     migration for, and passes over it otherwise (docs/FORMAT.md, "Payload versions"). Any
  ///     other value is refused with ``AppGroupMailboxError/invalidLimit(_:)`` naming
  ///     `payloadVersion` and the range, nothing written.
  ///   - priority: The level (0 to 9, default 5) of a message this enqueue adds. A replacement
  ///     takes the pending message's name, so it keeps that message's level and place.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `key` for a key outside the
  ///   rule, `priority` for a level outside 0 to 9, or `payloadVersion` (nothing written);
  ///   otherwise as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``
  ///   (``AppGroupMailboxError/mailboxFull`` only when a new message would be added: a
  ///   replacement or a kept one adds nothing).
  /// - Complexity: O(n) in the pending entries (their names are listed), plus one read of the
  ///   header of the message the index names, which must carry the key to hold it.
  @discardableResult
  public func enqueue(
    _ payload: Data, key: String, onConflict: AppGroupMailboxKeyPolicy, messageType: String = "",
    payloadVersion: Int = 1, priority: Int = AppGroupMailboxPriority.default
  ) throws -> AppGroupMailboxKeyedOutcome {
    let version = try AppGroupMailboxPayloadVersions.validated(payloadVersion)
    guard Self.isJSON(payload) else { throw AppGroupMailboxError.decodingFailure }
    return try spool.enqueueKeyed(
      payload, key: key, onConflict: onConflict, messageType: messageType,
      payloadVersion: version, priority: priority)
  }
}

extension AppGroupMailbox {
  /// What a keyed enqueue does on a conflict; see ``AppGroupMailboxKeyPolicy``.
  public typealias KeyPolicy = AppGroupMailboxKeyPolicy
  /// What a keyed enqueue did; see ``AppGroupMailboxKeyedOutcome``.
  public typealias KeyedOutcome = AppGroupMailboxKeyedOutcome

  /// Adds `message` under `key` so that at most one pending message has the key, as
  /// ``AppGroupRawMailbox/enqueue(_:key:onConflict:messageType:payloadVersion:priority:)`` describes
  /// (keys belong to the namespace: a pending message of another type with the key is replaced
  /// or kept alike).
  /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `key` for a key outside the rule;
  ///   otherwise as ``enqueue(_:priority:)``.
  /// - Complexity: O(n) in the pending entries (names), plus the header of the message the
  ///   key's index names.
  @discardableResult
  public func enqueue(
    _ message: Message, key: String, onConflict: KeyPolicy,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> KeyedOutcome {
    let payload: Data
    do {
      payload = try encoder.encode(message)
    } catch {
      throw MailboxError.encodingFailure
    }
    return try spool.enqueueKeyed(
      payload, key: key, onConflict: onConflict, messageType: messageType,
      payloadVersion: payloadVersion, priority: priority)
  }
}

extension Spool {
  /// The keyed enqueue behind both mailboxes' public ones.
  func enqueueKeyed(
    _ payload: Data, key: String, onConflict: AppGroupMailboxKeyPolicy, messageType: String,
    payloadVersion: Int, priority: Int
  ) throws -> AppGroupMailboxKeyedOutcome {
    let level = try AppGroupMailboxPriority.validated(priority)
    guard KeyRequest.isValid(key) else { throw KeyRequest.invalid }
    let id = KernelRandom.messageID()
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    defer { emit(diagnostics) }
    try sweepIfDue(diagnostics: &diagnostics)
    let outcome = try enqueue(
      payload: payload, id: id, messageType: messageType, payloadVersion: payloadVersion,
      explicitMicros: nil, unique: false,
      key: KeyRequest(key: key, replace: onConflict == .replace), level: level,
      diagnostics: &diagnostics)
    switch outcome {
    case .kept(let holder):
      return .kept(holder)
    case .replaced(let name):
      // An exchange (the pending message's id) puts a new file under a name a consumer may
      // have passed over as another type's: wake consumers as for a new message. (A
      // replacement under the new id was announced when it was published.)
      if name.id != id { configuration.onPending?() }
      return .replaced(name.id)
    default:
      configuration.onPending?()
      return .enqueued(id)
    }
  }
}
