import Foundation
import MailboxLocks

/// A message type that declares the version of its encoded form, its payload version.
///
/// Adopt it when a type's encoded form changes in a way older code must not decode (a field
/// renamed, its meaning changed), and raise ``payloadVersion``. A type that does not adopt it
/// has payload version 1. Every message records the payload version of the type that enqueued
/// it, or the one an untyped producer passed
/// (``AppGroupRawMailbox/enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``), in
/// the header member `payloadVersion` of docs/FORMAT.md, "Payload versions" (absent for
/// version 1, so version-1 files are unchanged). The payload version is separate from the
/// envelope format, which only the library changes.
///
/// A typed consumer (``AppGroupMailbox``) decodes a message of its own payload version as
/// `Message`, and one of an older version through the migration registered for that version
/// (``AppGroupMailbox/registerMigration(from:_:)``). Any other version, newer or older without a
/// migration, is never decoded: the claim passes over it as it passes over another type's
/// message and leaves it pending, at its position and with its delivery count, for a consumer
/// that reads that version (or until ``AppGroupMailboxLimits/messageLifetime`` expires it).
///
/// This is a Linux addition; the package we follow has no payload versions.
public protocol AppGroupMailboxVersionedMessage {
  /// The payload version of this type's encoded form: 1 ...
  /// ``AppGroupMailboxPayloadVersions/maximum`` (1 is what a type that does not adopt the
  /// protocol has). Read once, when a mailbox is
  /// opened; it must not change while the process runs.
  static var payloadVersion: Int { get }
}

/// The bounds of payload versions.
public enum AppGroupMailboxPayloadVersions {
  /// The largest payload version a type may declare or a migration may name: 2,147,483,647
  /// (2^31 - 1, an integer every JSON reader holds exactly).
  public static let maximum = Envelope.maximumPayloadVersion

  /// The payload version of `type`: its ``AppGroupMailboxVersionedMessage/payloadVersion``,
  /// or 1 when it does not adopt the protocol.
  static func declared(by type: Any.Type) -> Int {
    (type as? any AppGroupMailboxVersionedMessage.Type)?.payloadVersion ?? 1
  }

  /// `version` when it lies in 1 ... ``maximum``.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `payloadVersion` and the
  ///   accepted range (`"payloadVersion (accepted: 1...2147483647)"`) for any other value.
  static func validated(_ version: Int) throws -> Int {
    guard (1...maximum).contains(version) else {
      throw AppGroupMailboxError.invalidLimit("payloadVersion (accepted: \(1...maximum))")
    }
    return version
  }
}

/// What a spool asks of a typed consumer's payload versions: the one it writes, and whether it
/// reads a version.
protocol PayloadVersioning: Sendable {
  /// The payload version written with every message this consumer's mailbox enqueues.
  var current: Int { get }
  /// Whether this consumer decodes a message of payload version `version` (its own, or one it
  /// has a migration for). Thread-safe.
  func accepts(_ version: Int) -> Bool
}

/// A typed consumer's payload version and the migrations registered from older versions.
///
/// Thread safety: every member may be called from any thread. Migrations are only added or
/// replaced, never removed, so a version accepted by ``accepts(_:)`` during a claim still has
/// its migration when the claim decodes.
final class PayloadMigrations<Message: Decodable & Sendable>: PayloadVersioning {
  /// A migration: the raw JSON bytes of an older payload version to the current `Message`.
  typealias Migration = @Sendable (Data) throws -> Message

  /// The payload version `Message` declares, written with every message enqueued.
  let current: Int
  private let migrations = Locked<[Int: Migration]>([:])

  init(current: Int) { self.current = current }

  func accepts(_ version: Int) -> Bool {
    version == current || migrations.withLock { $0[version] != nil }
  }

  /// Registers (or replaces) the migration from `version`.
  func register(from version: Int, _ migrate: @escaping Migration) {
    migrations.withLock { $0[version] = migrate }
  }

  /// The message of payload version `version` encoded as `payload`: decoded directly at the
  /// current version, else through its migration (the claim quarantines as malformed what this
  /// throws for; a version without a migration never reaches here, see ``accepts(_:)``).
  /// Throws rather than returning an optional: in this generic class, `Message?` costs a
  /// run-time metadata lookup per message (docs/PERFORMANCE.md).
  /// - Throws: the decoder's or the migration's error; ``NoMigration`` when there is none.
  func decode(_ payload: Data, version: Int, decoder: JSONDecoder) throws -> Message {
    if version == current { return try decoder.decode(Message.self, from: payload) }
    guard let migrate = migrations.withLock({ $0[version] }) else { throw NoMigration() }
    return try migrate(payload)
  }

  /// Thrown by ``decode(_:version:decoder:)`` for a version without a migration.
  struct NoMigration: Error {}
}
