import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The claim loop on the ``PendingIndex`` keeps the hardened per-entry rules: entries that arrive
/// after the index started watching are checked like listed ones, and a batch publishes its
/// counters before its renames. (Names the claim pops but leaves in `pending/` coming back is
/// shown by HostileEntryTests' young hard link, delivered by the same mailbox once unlinked.)
@Suite struct IndexedClaimTests {
  @Test func `A foreign entry planted after the index started is quarantined by the next claim`()
    throws
  {
    let container = try TemporaryContainer()
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(diagnostics: diagnostics)
    #expect(try mailbox.claimPending().isEmpty)  // the index now watches pending/
    try Data("x".utf8).write(to: container.area("pending").appendingPathComponent("planted"))
    try mailbox.enqueue("A")
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
    #expect(container.names("pending").isEmpty)
    #expect(container.names("quarantine").count == 1)
    #expect(container.names("quarantine").first?.contains("-foreign-") == true)
  }

  @Test func `A symlink under a message name that arrives after the index started is quarantined`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("A")
    let claimed = try mailbox.claimPending()
    #expect(claimed.map(\.message) == ["A"])
    let name = PendingName(
      key: MessageKey(micros: Int64(Date().timeIntervalSince1970 * 1e6), sequence: 99), id: UUID(),
      attempts: 0)
    try FileManager.default.createSymbolicLink(
      atPath: container.area("pending").appendingPathComponent(name.fileName).path,
      withDestinationPath: "/etc/passwd")
    try mailbox.enqueue("B")
    #expect(try mailbox.claimPending().map(\.message) == ["B"])
    #expect(container.names("pending").isEmpty)
    #expect(container.names("quarantine").count == 1)
    #expect(container.names("quarantine").first?.contains("-unsafe-") == true)
  }

  @Test func `A released message returns to its place ahead of newer ones in the same process`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let claims = try mailbox.claimPending(limit: 1)
    #expect(claims.map(\.message) == ["A"])
    try claims[0].release()
    try mailbox.enqueue("C")
    #expect(try mailbox.claimPending().map(\.message) == ["A", "B", "C"])
  }

  @Test func `A batch writes its counters before its first rename and flushes pending once`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    try mailbox.enqueue("warm-up")
    let calls = try DurabilityTests.trace(mailbox.spool) {
      try mailbox.enqueue(contentsOf: ["A", "B"])
    }
    #expect(
      calls == [
        "openat tmp O_CREAT", "write file", "fsync file", "openat tmp O_CREAT", "write file",
        "fsync file", "pwrite state", "renameat2 tmp -> pending", "renameat2 tmp -> pending",
        "fsync pending",
      ])
    // format 1, sequence 3 (warm-up, A, B), depth 3.
    #expect(Array(try Self.stateFields(container).prefix(3)) == [1, 3, 3])
  }

  @Test func `A batch renamed only in part leaves counters for what it published`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    try mailbox.enqueue("warm-up")
    let (thrown, unfired) = thrownError(under: [
      .init(call: "renameat2", errno: EIO, skip: 1)
    ]) {
      try mailbox.enqueue(contentsOf: ["A", "B", "C"])
    }
    #expect(unfired.isEmpty)
    #expect(
      (thrown as? AppGroupMailboxError)?.ioFailureCause
        == .init(
          operation: "enqueue", systemCall: "renameat2", errno: EIO,
          role: "tmp area and the pending area"))
    // format 1, sequence 2 (warm-up and A), depth 2.
    #expect(Array(try Self.stateFields(container).prefix(3)) == [1, 2, 2])
    #expect(try mailbox.claimPending().map(\.message) == ["warm-up", "A"])
    #expect(container.names("tmp").isEmpty)
  }

  /// The numbers of the state line (format, sequence, depth, newest time).
  static func stateFields(_ container: TemporaryContainer) throws -> [UInt64] {
    let line = try String(contentsOf: container.area("state"), encoding: .utf8)
    return line.split(separator: " ").compactMap {
      UInt64($0.trimmingCharacters(in: .newlines))
    }
  }
}
