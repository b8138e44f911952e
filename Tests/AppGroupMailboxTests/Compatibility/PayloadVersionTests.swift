import Foundation
import Testing

@testable import AppGroupMailbox

/// A type declaring a payload version below 1.
private struct JobZero: Codable, Sendable, AppGroupMailboxVersionedMessage {
  static let payloadVersion = 0
}

private struct MigrationFailed: Error {}

// The README's example ("Payload versions"), as written there.
private struct Reminder: Codable, Sendable, AppGroupMailboxVersionedMessage {
  static let payloadVersion = 2
  var title: String
  var dueAt: Date?  // new in version 2
}
private struct ReminderV1: Codable { var title: String }  // what version 1 encoded

/// Payload versions: a type declares one, each message records it (absent for version 1),
/// migrations read older versions, and a version a consumer does not read is left pending.
@Suite struct PayloadVersionTests {
  static let id = UUID(uuidString: "3f2504e0-4f89-41d3-9a0c-0305e82c3301")!
  static let clockMicros = "1767225600000000"

  /// The bytes of the only pending file of namespace `jobs`.
  static func pendingFile(_ container: TemporaryContainer) throws -> [UInt8] {
    let names = container.names("pending")
    try #require(names.count == 1)
    return Array(try Data(contentsOf: container.area("pending").appendingPathComponent(names[0])))
  }

  @Test func `A version-1 message leaves the header member out, byte for byte as before`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(JobOne.self, messageType: "Job", clock: FakeClock())
    #expect(mailbox.payloadVersion == 1)
    try mailbox.enqueue(JobOne(number: 7), id: Self.id)
    let expected =
      #"{"enqueuedAt":\#(Self.clockMicros),"format":1,"id":"\#(Self.id.uuidString.lowercased())","#
      + #""messageType":"Job"}"# + "\n" + #"{"number":7}"#
    #expect(try Self.pendingFile(container) == Array(expected.utf8))
  }

  @Test func `A version-2 message records its version in the header`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(JobTwo.self, messageType: "Job", clock: FakeClock())
    #expect(mailbox.payloadVersion == 2)
    try mailbox.enqueue(JobTwo(number: 7, label: "seven"), id: Self.id)
    let bytes = try Self.pendingFile(container)
    let line = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    #expect(
      line
        == #"{"enqueuedAt":\#(Self.clockMicros),"format":1,"id":"\#(Self.id.uuidString.lowercased())","#
        + #""messageType":"Job","payloadVersion":2}"#)
    let (header, range) = try Envelope.decode(bytes)
    #expect(header.format == 1)
    #expect(header.declaredPayloadVersion == 2)
    let message = try JSONDecoder().decode(JobTwo.self, from: Data(bytes[range]))
    #expect(message == JobTwo(number: 7, label: "seven"))
  }

  @Test func `A keyed version-2 message carries both optional members, keys sorted`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(JobTwo.self, messageType: "Job")
    _ = try mailbox.enqueue(JobTwo(number: 7, label: "seven"), key: "k", onConflict: .replace)
    let bytes = try Self.pendingFile(container)
    let line = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    #expect(line.hasSuffix(#","key":"k","messageType":"Job","payloadVersion":2}"#))
    let (header, _) = try Envelope.decode(bytes)
    #expect(header.key == "k")
    #expect(header.payloadVersion == 2)
    #expect(try mailbox.claimPending().map(\.message) == [JobTwo(number: 7, label: "seven")])
  }

  @Test func `A version-1 message is read by a version-2 consumer through its migration`() throws {
    let container = try TemporaryContainer()
    let old = try container.mailbox(JobOne.self, messageType: "Job")
    try old.enqueue(JobOne(number: 7))
    let new = try container.mailbox(JobTwo.self, messageType: "Job")
    try new.registerMigration(from: 1, JobTwo.fromOne)
    try new.enqueue(JobTwo(number: 8, label: "current"))
    let claims = try new.claimPending()
    #expect(
      claims.map(\.message) == [
        JobTwo(number: 7, label: "from 1"), JobTwo(number: 8, label: "current"),
      ])
    for claim in claims { try claim.acknowledge() }
    #expect(container.names("pending").isEmpty)
    #expect(container.quarantined().isEmpty)
  }

  @Test
  func `A version-2 message is left by a version-1 consumer and delivered to a version-2 process`()
    throws
  {
    let container = try TemporaryContainer()
    let old = try container.mailbox(JobOne.self, messageType: "Job")
    let new = try container.mailbox(JobTwo.self, messageType: "Job")
    try old.enqueue(JobOne(number: 1))
    try new.enqueue(JobTwo(number: 2, label: "two"))
    try old.enqueue(JobOne(number: 3))
    let versionTwoName = container.names("pending")[1]
    #expect(versionTwoName.hasSuffix("-0.msg"))
    // The version-2 JSON also decodes as the version-1 type: only the version keeps it out.
    let first = try Processes.runWorker(["version-consume", container.url.path, "jobs", "1"])
    #expect(first.status == 0)
    #expect(first.lines == ["1 1", "1 3", "claimed 2"])
    #expect(container.names("pending") == [versionTwoName])  // same position, no delivery counted
    #expect(container.quarantined().isEmpty)
    let second = try Processes.runWorker(["version-consume", container.url.path, "jobs", "2"])
    #expect(second.status == 0)
    #expect(second.lines == ["2 2 two", "claimed 1"])
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
    #expect(container.quarantined().isEmpty)
  }

  @Test func `An older version without a migration is left pending until one is registered`() throws
  {
    let container = try TemporaryContainer()
    let old = try container.mailbox(JobOne.self, messageType: "Job")
    try old.enqueue(JobOne(number: 5))
    let names = container.names("pending")
    let new = try container.mailbox(JobTwo.self, messageType: "Job")
    #expect(try new.claimPending().isEmpty)
    #expect(try new.claimPending().isEmpty)
    #expect(container.names("pending") == names)
    #expect(container.quarantined().isEmpty)
    try new.registerMigration(from: 1, JobTwo.fromOne)
    let claims = try new.claimPending()
    #expect(claims.map(\.message) == [JobTwo(number: 5, label: "from 1")])
    try claims.first?.acknowledge()
    #expect(container.names("pending").isEmpty)
  }

  @Test func `The README's payload-version example migrates a version-1 reminder`() throws {
    let container = try TemporaryContainer()
    try container.mailbox(ReminderV1.self, namespace: "reminders", messageType: "Reminder")
      .enqueue(ReminderV1(title: "call"))
    // The README's lines, with a test container for the app group.
    let reminders = try AppGroupMailbox<Reminder>(
      containerURL: container.url, namespace: "reminders")
    try reminders.registerMigration(from: 1) { json in
      Reminder(title: try JSONDecoder().decode(ReminderV1.self, from: json).title, dueAt: nil)
    }
    let claims = try reminders.claimPending()
    #expect(claims.map(\.message.title) == ["call"])
    #expect(claims.map(\.message.dueAt) == [nil])
  }

  @Test func `A migration that throws quarantines the message as malformed`() throws {
    let container = try TemporaryContainer()
    try container.mailbox(JobOne.self, messageType: "Job").enqueue(JobOne(number: 5))
    let new = try container.mailbox(JobTwo.self, messageType: "Job")
    try new.registerMigration(from: 1) { _ in throw MigrationFailed() }
    #expect(try new.claimPending().isEmpty)
    #expect(container.names("pending").isEmpty)
    #expect(container.quarantineReasons() == ["malformed"])
  }

  @Test func `Versions outside the accepted ranges are refused`() throws {
    let container = try TemporaryContainer()
    let new = try container.mailbox(JobTwo.self, messageType: "Job")
    for version in [0, 2, 3] {
      #expect(throws: AppGroupMailboxError.invalidLimit("migration version")) {
        try new.registerMigration(from: version, JobTwo.fromOne)
      }
    }
    let old = try container.mailbox(JobOne.self, messageType: "Job")
    #expect(throws: AppGroupMailboxError.invalidLimit("migration version")) {
      try old.registerMigration(from: 1) { try JSONDecoder().decode(JobOne.self, from: $0) }
    }
    #expect(throws: AppGroupMailboxError.invalidLimit("payloadVersion")) {
      try container.mailbox(JobZero.self)
    }
  }

  @Test(arguments: [2, 10, AppGroupMailboxPayloadVersions.maximum])
  func `The direct header with a payload version equals the JSONEncoder header`(version: Int)
    throws
  {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let header = EnvelopeHeader(
      format: 1, id: Self.id.uuidString.lowercased(), enqueuedAt: 5, messageType: "Job",
      payloadVersion: version)
    let slow = try encoder.encode(header) + Data("\nP".utf8)
    let fast = try #require(
      Envelope.fastEncode(
        id: Self.id, enqueuedAt: 5, messageType: "Job", payloadVersion: version,
        payload: Data("P".utf8)))
    #expect(fast == slow)
    #expect(Envelope.fastDecode(ArraySlice(Array(fast.dropLast(2)))) == header)
    #expect(try Envelope.decode(Array(fast)).0 == header)
  }

  @Test func `Other spellings of the payload version decode as the JSON path judges them`() throws {
    let prefix = #"{"enqueuedAt":5,"format":1,"id":"\#(Self.id.uuidString.lowercased())","#
    let one = prefix + #""messageType":"Job","payloadVersion":1}"#
    #expect(Envelope.fastDecode(ArraySlice(Array(one.utf8))) == nil)
    #expect(try Envelope.decode(Array((one + "\nP").utf8)).0.payloadVersion == nil)
    for bad in ["0", "-2", "\"2\"", "2.5"] {
      let line = prefix + #""messageType":"Job","payloadVersion":\#(bad)}"# + "\nP"
      #expect(throws: EnvelopeError.malformed) { try Envelope.decode(Array(line.utf8)) }
    }
  }
}
