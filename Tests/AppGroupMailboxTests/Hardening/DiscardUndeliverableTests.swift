import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// discard-oldest and a message no claim would deliver (found by a review): a dead letter by its
/// name stayed pending while a deliverable message was evicted to make room, in the library and
/// in interop/python alike; the next claim then quarantined the dead letter, so the evicted
/// message was lost for nothing.
@Suite struct DiscardUndeliverableTests {
  @Test(arguments: ["swift", "python"])
  func `A dead letter in pending goes to quarantine before a valid message is evicted`(
    producer: String
  ) throws {
    if producer == "python" { try #require(PythonSpool.available, "python3 is not installed") }
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 3, maxDeliveryAttempts: 1), overflowPolicy: .discardOldest)
    let ids = try (1...3).map { try mailbox.enqueue(Data("\($0)".utf8)).id }
    // The newest becomes a dead letter: claimed once, as a consumer that crashed left it.
    let newest = try #require(
      container.names("pending").compactMap(PendingName.init(parsing:)).first { $0.id == ids[2] })
    let dead = PendingName(key: newest.key, id: newest.id, attempts: 1)
    #expect(
      rename(container.path("pending", newest.fileName), container.path("pending", dead.fileName))
        == 0)
    let added: UUID
    if producer == "swift" {
      added = try mailbox.enqueue(Data("4".utf8)).id
    } else {
      let python = try #require(try PythonSpool.enqueue(["4"], into: container).first)
      added = try #require(UUID(uuidString: python.id))
    }
    let pending = container.names("pending").compactMap(PendingName.init(parsing:))
    #expect(Set(pending.map(\.id)) == [ids[0], ids[1], added])
    #expect(container.quarantineReasons() == ["deadletter"])
  }
}
