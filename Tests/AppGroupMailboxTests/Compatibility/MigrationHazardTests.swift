import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `mailboxctl migrate` on old spools a careless or hostile writer left: it never deletes an old
/// file whose message it did not write.
@Suite struct MigrationHazardTests {
  static let id = UUID(uuidString: "40000000-0000-4000-8000-000000000001")!

  /// The namespace directory of namespace `jobs`.
  static func namespace(_ container: TemporaryContainer) -> URL {
    container.url.appendingPathComponent("AppGroupMailbox/jobs")
  }

  /// Writes an old-format message file `name` (whose bytes are `name`'s exactly) and returns
  /// its bytes.
  @discardableResult
  static func writeOld(
    _ container: TemporaryContainer, _ name: String, id: UUID = id, seconds: Double = 0,
    message: String
  ) throws -> Data {
    let directory = namespace(container)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let date = seconds == 0 ? Date().timeIntervalSinceReferenceDate - 60 : seconds
    let bytes = Data(
      "{\"id\":\"\(id.uuidString)\",\"enqueuedAt\":\(date),\"message\":\(message)}".utf8)
    try bytes.write(to: directory.appendingPathComponent(name))
    return bytes
  }

  /// The old-format entries left in the namespace directory.
  static func oldNames(_ container: TemporaryContainer) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: namespace(container).path)
      .filter { ["pending-", "claimed-", "quarantine-"].contains(where: $0.hasPrefix) }
  }

  /// The payloads pending in namespace `jobs`, in claim order.
  static func pendingPayloads(_ container: TemporaryContainer) throws -> [String] {
    try container.rawMailbox().claimPending().map { String(decoding: $0.payload, as: UTF8.self) }
  }

  /// The contents of the quarantined files with reason `reason`.
  static func quarantinedBytes(_ container: TemporaryContainer, _ reason: QuarantineReason)
    throws -> [Data]
  {
    try container.quarantined().filter { $0.reason == reason }.map {
      try Data(contentsOf: container.area("quarantine").appendingPathComponent($0.fileName))
    }
  }

  @Test func `A second old message with the same id and other bytes goes to quarantine, kept`()
    throws
  {
    let container = try TemporaryContainer()
    try Self.writeOld(container, "pending-00000000000000000001-A.json", message: #"{"w":"A"}"#)
    let second = try Self.writeOld(
      container, "pending-00000000000000000002-B.json", message: #"{"w":"B"}"#)
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":1,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(try Self.oldNames(container).isEmpty)
    #expect(try Self.quarantinedBytes(container, .conflict) == [second])
    #expect(container.quarantined().map(\.id) == [Self.id])
    #expect(try Self.pendingPayloads(container) == [#"{"w":"A"}"#])
  }

  @Test func `An old message whose id a different message of the mailbox holds is kept`() throws {
    let container = try TemporaryContainer()
    try container.rawMailbox().enqueue(Data(#"{"w":"new"}"#.utf8), id: Self.id)
    let old = try Self.writeOld(
      container, "pending-00000000000000000001-A.json", message: #"{"w":"old"}"#)
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":0,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(try Self.quarantinedBytes(container, .conflict) == [old])
    #expect(try Self.pendingPayloads(container) == [#"{"w":"new"}"#])
  }

  @Test func `An old message the mailbox holds with the same payload and type is already present`()
    throws
  {
    let container = try TemporaryContainer()
    // The old spool holding one message twice: the same date too.
    let seconds = Date().timeIntervalSinceReferenceDate.rounded(.down) - 60
    for number in 1...2 {
      try Self.writeOld(
        container, "pending-0000000000000000000\(number)-A.json", seconds: seconds,
        message: #"{"w":"A"}"#)
    }
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":1,\"alreadyPresent\":1,\"expired\":0,\"quarantined\":0}\n")
    #expect(try Self.oldNames(container).isEmpty)
    #expect(container.quarantined().isEmpty)
    // Imported untyped: the same payload under another type tag is another message.
    try Self.writeOld(container, "pending-00000000000000000003-A.json", message: #"{"w":"A"}"#)
    let typed = try Mailboxctl.run(
      ["migrate"] + container.arguments() + ["--type", "job", "--json"])
    #expect(
      typed.stdout == "{\"imported\":0,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(container.quarantined().map(\.reason) == [.conflict])
    #expect(try Self.pendingPayloads(container) == [#"{"w":"A"}"#])
  }

  @Test func `An old-format name that is not UTF-8 goes to quarantine and unlocks the directory`()
    throws
  {
    let container = try TemporaryContainer()
    try Self.writeOld(container, "pending-00000000000000000001-A.json", message: #"{"w":"A"}"#)
    // pending-\xff.json, which the old format never writes.
    let path =
      Array(Self.namespace(container).path.utf8) + Array("/pending-".utf8) + [0xFF]
      + Array(".json".utf8) + [0]
    let fd = path.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer {
      open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    }
    #expect(fd >= 0)
    #expect(write(fd, "odd", 3) == 3)
    close(fd)
    let refused = try Mailboxctl.run(["status"] + container.arguments())
    #expect(refused.status == 69)
    #expect(refused.stderr.contains("holds 2 files of the old format"), "\(refused.stderr)")
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":1,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":1}\n")
    #expect(try Self.quarantinedBytes(container, .foreign) == [Data("odd".utf8)])
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: Self.namespace(container).path)
        .allSatisfy { !$0.hasPrefix("pending-") })
    let status = try Mailboxctl.run(["status"] + container.arguments())
    #expect(status.status == 0, "\(status.stderr)")
    #expect(try Self.pendingPayloads(container) == [#"{"w":"A"}"#])
  }

  @Test func `Old messages dated before 1970 or after 2286 go to quarantine, never clamped`()
    throws
  {
    let container = try TemporaryContainer()
    try Self.writeOld(container, "pending-00000000000000000001-A.json", message: #"{"w":"A"}"#)
    // Seconds since 2001-01-01: the year 1684 and the year 2317.
    let early = try Self.writeOld(
      container, "pending-00000000000000000002-B.json", id: UUID(), seconds: -1e10, message: "1")
    let late = try Self.writeOld(
      container, "pending-00000000000000000003-C.json", id: UUID(), seconds: 1e10, message: "2")
    let result = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout == "{\"imported\":1,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":2}\n")
    #expect(Set(try Self.quarantinedBytes(container, .foreign)) == [early, late])
    #expect(try Self.oldNames(container).isEmpty)
    #expect(try Mailboxctl.run(["status"] + container.arguments()).status == 0)
    #expect(try Self.pendingPayloads(container) == [#"{"w":"A"}"#])
  }

  @Test func `Migrate suggests no lifetime for a message older than any it can set`() throws {
    let container = try TemporaryContainer()
    // 1975: older than the longest lifetime config sets (1e9 s, 31.7 years).
    try Self.writeOld(
      container, "pending-00000000000000000001-A.json", seconds: -820_000_000, message: "1")
    let result = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(result.status == 65)
    #expect(result.stderr.contains("no --message-lifetime imports it"), "\(result.stderr)")
    #expect(!result.stderr.contains("run migrate again"))
    #expect(try Self.oldNames(container).count == 1)
  }
}
