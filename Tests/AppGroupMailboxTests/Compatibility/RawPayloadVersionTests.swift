import Foundation
import Testing

@testable import AppGroupMailbox

/// Payload versions on the untyped side: an untyped producer records the version it is given
/// (so a producer outside Swift can write for a versioned consumer), and untyped consumers and
/// the inspector say which version a message has.
@Suite struct RawPayloadVersionTests {
  // Computed: a stored static Data of more than 14 bytes reads as a leak under LeakSanitizer.
  static var versionTwo: Data { Data(#"{"number":2,"label":"two"}"#.utf8) }

  /// A version-2 consumer of `Job` that migrates version 1.
  fileprivate static func consumer(_ container: TemporaryContainer) throws -> AppGroupMailbox<
    JobTwo
  > {
    let tasks = try container.mailbox(JobTwo.self, messageType: "Job")
    try tasks.registerMigration(from: 1, JobTwo.fromOne)
    return tasks
  }

  @Test func `An untyped version-2 message is decoded by a version-2 consumer, not migrated`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    try raw.enqueue(Self.versionTwo, messageType: "Job", payloadVersion: 2)
    try raw.enqueue(Data(#"{"number":1}"#.utf8), messageType: "Job")
    let claims = try Self.consumer(container).claimPending()
    #expect(
      claims.map(\.message) == [
        JobTwo(number: 2, label: "two"), JobTwo(number: 1, label: "from 1"),
      ])
    #expect(container.quarantined().isEmpty)
  }

  @Test func `A version-1 consumer leaves an untyped version-2 message pending`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let receipt = try raw.enqueue(Self.versionTwo, messageType: "Job", payloadVersion: 2)
    let old = try container.mailbox(JobOne.self, messageType: "Job")
    #expect(try old.claimPending().isEmpty)
    #expect(container.pendingNames().map(\.id) == [receipt.id])
  }

  /// The header line of the only pending file.
  static func header(_ container: TemporaryContainer) throws -> [UInt8] {
    Array(try PayloadVersionTests.pendingFile(container).prefix { $0 != UInt8(ascii: "\n") })
  }

  @Test func `The untyped header is byte for byte the typed one`() throws {
    let id = UUID()
    let typedContainer = try TemporaryContainer()
    let typed = try typedContainer.mailbox(JobTwo.self, messageType: "Job", clock: FakeClock())
    try typed.enqueue(JobTwo(number: 2, label: "two"), id: id)
    let rawContainer = try TemporaryContainer()
    let raw = try AppGroupRawMailbox(
      containerURL: rawContainer.url, namespace: "jobs", limits: .init(),
      overflowPolicy: .rejectNewest, diagnostic: nil, durability: .full, permissions: .private,
      clock: FakeClock().mailboxClock)
    try raw.enqueue(Self.versionTwo, id: id, messageType: "Job", payloadVersion: 2)
    #expect(try Self.header(rawContainer) == Self.header(typedContainer))
  }

  @Test func `Every untyped enqueue records the version, and the raw claim and inspector say it`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let plain = try raw.enqueue(Self.versionTwo, payloadVersion: 3)
    let keyed = try raw.enqueue(
      Self.versionTwo, key: "k", onConflict: .replace, payloadVersion: 4)
    let dated = try raw.enqueue(Self.versionTwo, notBefore: Date(), payloadVersion: 5)
    let delayed = try raw.enqueue(Self.versionTwo, delay: 0, payloadVersion: 6)
    let unversioned = try raw.enqueue(Self.versionTwo)
    let expected = [
      plain.id: 3, keyed.id: 4, dated.id: 5, delayed.id: 6, unversioned.id: 1,
    ]
    for (id, version) in expected {
      let envelope = try #require(try raw.inspector.envelope(id.uuidString))
      #expect(envelope.payloadVersion == version)
      #expect(envelope.key == (id == keyed.id ? "k" : nil))
    }
    let claims = try raw.claimPending()
    #expect(claims.count == expected.count)
    for claim in claims { #expect(claim.payloadVersion == expected[claim.id]) }
  }

  @Test(arguments: [0, -1, AppGroupMailboxPayloadVersions.maximum + 1])
  func `A version outside 1 to 2^31 - 1 is refused and nothing is written`(version: Int) throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let refusal = AppGroupMailboxError.invalidLimit("payloadVersion (accepted: 1...2147483647)")
    #expect(throws: refusal) { try raw.enqueue(Self.versionTwo, payloadVersion: version) }
    #expect(throws: refusal) {
      try raw.enqueue(Self.versionTwo, delay: 60, payloadVersion: version)
    }
    #expect(throws: refusal) {
      try raw.enqueue(Self.versionTwo, key: "k", onConflict: .keep, payloadVersion: version)
    }
    #expect(throws: refusal) { try raw.validate(Self.versionTwo, payloadVersion: version) }
    #expect(try raw.inspector.status().depth == 0)
    #expect(container.names("tmp").isEmpty)
  }

  @Test func `validate counts the version's header bytes against the payload limit`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    // A payload whose version-1 file is exactly at the limit.
    let header = try Envelope.encode(
      id: UUID(), enqueuedAt: MessageKey.maxMicros, messageType: "", payload: Data())
    let payload = Data(
      ("\"" + String(repeating: "a", count: raw.limits.maxPayloadBytes - header.count - 2) + "\"")
        .utf8)
    try raw.validate(payload)
    #expect(throws: AppGroupMailboxError.self) { try raw.validate(payload, payloadVersion: 2) }
  }
}
