public import Foundation

extension AppGroupMailbox {
  /// The payload version this mailbox writes with every message it enqueues and decodes without
  /// a migration: `Message`'s ``AppGroupMailboxVersionedMessage/payloadVersion``, or 1 when
  /// `Message` does not adopt that protocol (a Linux addition; see docs/FORMAT.md, "Payload
  /// versions").
  public var payloadVersion: Int { payloadMigrations.current }

  /// Registers how a message of the older payload version `version` becomes a `Message`:
  /// `migrate` receives the message's encoded JSON bytes as stored (what that version's type
  /// encoded) and returns the current value. Registering a version again replaces its migration.
  ///
  /// From then on claims of this mailbox object take messages of `version` and deliver what
  /// `migrate` returns; a message `migrate` throws for is quarantined as malformed, as one that
  /// does not decode is. Until a migration for a version is registered, claims pass over its
  /// messages and leave them pending (also those passed over before: registering makes this
  /// mailbox look at them again on its next claim). A Linux addition.
  ///
  /// Thread and process safety: may be called from any thread, also while claims run; it
  /// affects this mailbox object only (each process registers its own migrations). `migrate`
  /// runs on the claiming thread, outside every lock, and must not claim from this mailbox.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` (`"migration version"`) unless `version` is
  ///   1 ... ``payloadVersion`` - 1 (nothing registered).
  public func registerMigration(
    from version: Int, _ migrate: @escaping @Sendable (Data) throws -> Message
  ) throws {
    guard version >= 1, version < payloadVersion else {
      throw MailboxError.invalidLimit("migration version")
    }
    payloadMigrations.register(from: version, migrate)
    spool.forgetOtherTypes()
  }
}
