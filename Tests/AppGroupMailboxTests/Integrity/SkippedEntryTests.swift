import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Case C16 (issue 11, item 2): an entry a consumer skips for now (a hard link younger than its
/// grace period) is looked at again by a timer in the waiting code, not by another file event.
@Suite struct SkippedEntryTests {
  /// The grace period plus one second, widened by `AGM_WAKE_DEADLINE_MS` under load.
  static var bound: TimeInterval {
    Double(Spool.linkedEntryGrace) / 1_000_000 + 1 + Double(WatchSupport.wakeDeadlineMicros) / 1e6
  }

  /// Writes a valid message file into `tmp/` and links it into `pending/` under two valid
  /// names of its id, then removes the `tmp/` name: two names of one inode are left in
  /// `pending/`. Returns the id and when the last link changed.
  static func plantLinkedPair(_ container: TemporaryContainer) throws -> (UUID, Date) {
    let id = UUID()
    let now = micros(Date())
    let file = try Envelope.encode(
      id: id, enqueuedAt: now, messageType: "", payload: Data("\"linked\"".utf8))
    let tmp = container.path("tmp", "planted")
    try file.write(to: URL(fileURLWithPath: tmp))
    for sequence in [1_000 as UInt64, 1_001] {
      let name = pendingName(micros: now, sequence: sequence, id: id)
      #expect(Glibc.link(tmp, container.path("pending", name)) == 0)
    }
    #expect(unlink(tmp) == 0)
    return (id, Date())
  }

  @Test
  func `C16: a hard link dropped into pending while drain --follow waits is handled by itself`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let drain = try WatchSupport.startFollowingDrain(container)
    let (id, planted) = try Self.plantLinkedPair(container)
    // No further event: only the timer can make drain look again.
    let delivered = waitUntil(deadline: Self.bound) { drain.stdout.contains("\n") }
    let elapsed = Date().timeIntervalSince(planted)
    drain.signal(SIGTERM)
    let result = try drain.finish()
    #expect(delivered, "handled after \(elapsed) s")
    #expect(result.status == 0)
    let lines = try jsonLines(result.stdout)
    #expect(lines.map { $0["id"] as? String } == [id.uuidString.lowercased()])
    #expect(lines.map { $0["message"] as? String } == ["linked"])
    // The extra name went to quarantine (as a copy); the last name was delivered once.
    #expect(container.quarantined().map(\.reason) == [.unsafe])
    #expect(container.quarantined().map(\.id) == [id])
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
  }

  @Test func `C16: wait(timeout:) returns for a skipped entry once its grace period ends`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let (id, planted) = try Self.plantLinkedPair(container)
    #expect(try mailbox.claimPending().isEmpty)  // both names are young links: skipped
    let recheck = try #require(mailbox.nextRecheckDate())
    #expect(recheck.timeIntervalSince(planted) <= 1.01)
    #expect(try mailbox.wait(timeout: 30))
    #expect(Date().timeIntervalSince(planted) < Self.bound)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.id) == [id])
    #expect(container.quarantined().map(\.id) == [id])
    #expect(mailbox.nextRecheckDate() == nil)
  }
}
