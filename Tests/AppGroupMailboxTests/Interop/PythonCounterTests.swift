import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The Python producer's counters (found by a review of docs/FORMAT.md against both readers):
/// rebuilt from the names, a future-dated import became the clock of every later enqueue, of
/// the Swift library's too; and a name or line past the largest sequence producers hand out
/// made it name a message with a sequence no reader parses, published but never delivered.
@Suite(.enabled(if: PythonSpool.available, "python3 is not installed"))
struct PythonCounterTests {
  /// The message's name time in `pending/` of `id`.
  func micros(of id: String, in container: TemporaryContainer) throws -> Int64 {
    let name = try #require(
      container.names("pending").compactMap(PendingName.init(parsing:)).first {
        $0.id.uuidString.lowercased() == id
      })
    return name.key.micros
  }

  @Test func `A future-dated import does not become the clock of the Python producer's rebuild`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let future = try #require(ISO8601DateFormatter().date(from: "2030-01-01T00:00:00Z"))
    try mailbox.enqueue(Data("1".utf8), enqueuedAt: future)
    // Truncated: the next user of the lock rebuilds it from the names (docs/FORMAT.md).
    #expect(truncate(container.area("").appendingPathComponent("state").path, 0) == 0)
    let before = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let python = try #require(try PythonSpool.enqueue(["2"], into: container).first)
    #expect(python.outcome == "published")
    let after = Int64(Date().timeIntervalSince1970 * 1_000_000)
    #expect((before...after).contains(try micros(of: python.id, in: container)))
    // And the Swift producer after it: the line Python wrote holds no future clock either.
    let swift = try mailbox.enqueue(Data("3".utf8)).id.uuidString.lowercased()
    #expect(try micros(of: swift, in: container) <= Int64(Date().timeIntervalSince1970 * 1e6))
  }

  @Test func `A name past the largest sequence does not move the Python producer's counter`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let id = UUID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    try container.plant(
      "pending", pendingName(micros: now - 1_000_000, sequence: UInt64.max, id: id),
      envelope(id: id, micros: now - 1_000_000, text: "planted", type: ""))
    #expect(truncate(container.area("").appendingPathComponent("state").path, 0) == 0)
    let python = try #require(try PythonSpool.enqueue(["2"], into: container).first)
    #expect(python.outcome == "published")
    let names = container.names("pending").compactMap(PendingName.init(parsing:))
    #expect(names.count == 2)
    #expect(
      names.first { $0.id.uuidString.lowercased() == python.id }?.key.sequence == 1,
      "\(container.names("pending"))")
    // Both are delivered: none went to quarantine as a name no reader parses.
    let claimed = try mailbox.claimPending(limit: 10)
    #expect(Set(claimed.map(\.id)) == Set([id, try #require(UUID(uuidString: python.id))]))
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `A state line past the largest sequence is rebuilt by the Python producer`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let line = "1 09223372036854775808 00000000000000000001 00000000000000000000\n"
    // Written in place: `state` is never replaced (its lock is on the inode).
    let fd = open(container.area("").appendingPathComponent("state").path, O_WRONLY | O_TRUNC)
    try #require(fd >= 0)
    #expect(Array(line.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 65)
    close(fd)
    let python = try #require(try PythonSpool.enqueue(["2"], into: container).first)
    #expect(python.outcome == "published")
    let names = container.names("pending").compactMap(PendingName.init(parsing:))
    #expect(names.map(\.key.sequence).sorted() == [1, 2], "\(container.names("pending"))")
  }
}
