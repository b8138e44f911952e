import AppGroupMailbox
import Foundation
import Testing

struct Smoke {
  @Test func cycle() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
    defer { try? FileManager.default.removeItem(at: dir) }
    let mailbox = try AppGroupMailbox<String>(containerURL: dir, namespace: "jobs")
    try mailbox.enqueue("a")
    try mailbox.enqueue("b")
    let id = UUID()
    try mailbox.enqueue("c", id: id)
    try mailbox.enqueue("c2", id: id)
    let claims = try mailbox.claimPending(limit: 2)
    #expect(claims.map(\.message) == ["a", "b"])
    try claims[0].acknowledge()
    try claims[1].release()
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claims[1].acknowledge() }
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["b", "c"])
    #expect(again.map(\.deliveryCount) == [2, 1])
    for claim in again { try claim.acknowledge() }
    #expect(try mailbox.claimPending().isEmpty)
  }
}
