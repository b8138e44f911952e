import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Case C05: the system calls of one enqueue (what `strace` shows), and torn files.
@Suite struct DurabilityTests {
  /// The recorded calls of `body`, with descriptors named by their role in `spool`.
  static func trace(
    _ spool: Spool, _ body: () throws -> Void
  ) throws -> [String] {
    let recorder = SystemCallRecording.Recorder()
    try SystemCallRecording.recording(recorder, body)
    let directories = spool.directories
    var roles: [Int32: String] = [
      directories.tmp: "tmp", directories.pending: "pending", directories.claimed: "claimed",
      directories.quarantine: "quarantine", directories.state: "state",
      directories.namespace: "namespace", directories.delayed: "delayed",
    ]
    var lines: [String] = []
    for call in recorder.all {
      let role = roles[call.descriptor] ?? "fd?"
      switch call.name {
      case "flock":
        continue  // Locking changes nothing on disk.
      case "openat":
        // Reads and listings change nothing: only creating opens are part of the trace.
        guard call.flags & O_CREAT != 0 else { continue }
        if let result = call.result, result >= 0 { roles[Int32(result)] = "file" }
        lines.append("openat \(role) O_CREAT")
      case "renameat", "renameat2", "linkat":
        lines.append("\(call.name) \(role) -> \(roles[call.targetDescriptor ?? -1] ?? "fd?")")
      default:
        lines.append("\(call.name) \(role)")
      }
    }
    return lines
  }

  @Test
  func `C05b: enqueue writes and flushes the file, renames it into pending, then flushes pending`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: FakeClock())
    try mailbox.enqueue("warm-up")
    let calls = try Self.trace(mailbox.spool) { try mailbox.enqueue("A") }
    #expect(
      calls == [
        "openat tmp O_CREAT", "write file", "fsync file", "pwrite state",
        "renameat2 tmp -> pending", "fsync pending",
      ])
  }

  @Test func `C05b: with relaxed durability enqueue flushes nothing`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      durability: .relaxed, clock: FakeClock())
    try mailbox.enqueue("warm-up")
    let calls = try Self.trace(mailbox.spool) { try mailbox.enqueue("A") }
    #expect(
      calls == ["openat tmp O_CREAT", "write file", "pwrite state", "renameat2 tmp -> pending"])
  }

  @Test func `Release and recovery flush pending after the rename back`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 5), clock: clock)
    try mailbox.enqueue("A")
    let claims = try mailbox.claimPending()
    let released = try Self.trace(mailbox.spool) { try claims[0].release() }
    #expect(released == ["renameat2 claimed -> pending", "fsync pending"])
    _ = try mailbox.claimPending()
    clock.advance(6)
    let recovered = try Self.trace(mailbox.spool) { try mailbox.performMaintenance() }
    #expect(Array(recovered.prefix(2)) == ["renameat2 claimed -> pending", "fsync pending"])
  }

  @Test
  func
    `C05a: a zero-length and a NUL-filled file under message names are quarantined, the valid message delivered`()
    throws
  {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: diagnostics)
    let base = micros(clock.now)
    let empty = PendingName(key: .init(micros: base, sequence: 1), id: UUID(), attempts: 0)
    let zeros = PendingName(key: .init(micros: base, sequence: 2), id: UUID(), attempts: 0)
    let valid = PendingName(key: .init(micros: base, sequence: 3), id: UUID(), attempts: 0)
    try container.plant("pending", empty.fileName, Data())
    try container.plant("pending", zeros.fileName, Data(repeating: 0, count: 4_096))
    try container.plant(
      "pending", valid.fileName, try messageFile("valid", id: valid.id, enqueuedAt: base))
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["valid"])
    #expect(claims.map(\.id) == [valid.id])
    #expect(diagnostics.all == [.malformedMessageQuarantined, .malformedMessageQuarantined])
    let quarantined = container.names("quarantine").compactMap(QuarantineName.init(parsing:))
    #expect(Set(quarantined.compactMap(\.id)) == [empty.id, zeros.id])
    #expect(quarantined.map(\.reason) == [.malformed, .malformed])
    #expect(container.names("pending") == [])
    try claims[0].acknowledge()
    try container.expectDepth(0)
    // Quarantined ids still block a re-import of the same id.
    try mailbox.enqueue("again", id: empty.id)
    #expect(container.names("pending") == [])
  }
}
