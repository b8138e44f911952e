import Foundation
import Testing

@testable import AppGroupMailbox

@Suite struct SmokeTests {
  @Test func `A message enqueued by one process is claimed by another`() throws {
    let container = try TemporaryContainer()
    _ = try Processes.runWorker(["produce", container.url.path, "jobs", "0", "3"])
    let result = try Processes.runWorker(["consume", container.url.path, "jobs"])
    #expect(result.status == 0)
    #expect(result.lines == ["0", "1", "2"])
  }

  @Test func `Acknowledge, release and a stale claim behave as documented`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("a")
    try mailbox.enqueue("b")
    let claims = try mailbox.claimPending(limit: 2)
    #expect(claims.map(\.message) == ["a", "b"])
    try claims[0].acknowledge()
    try claims[1].release()
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claims[1].acknowledge() }
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["b"])
    #expect(again.map(\.deliveryCount) == [2])
  }
}
