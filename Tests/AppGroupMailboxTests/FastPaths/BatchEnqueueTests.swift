import Foundation
import Testing

@testable import AppGroupMailbox

@Suite struct BatchEnqueueTests {
  @Test func `A batch is claimed in order after earlier messages and before later ones`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("before")
    let ids = try mailbox.enqueue(contentsOf: ["one", "two", "three"])
    try mailbox.enqueue("after")
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["before", "one", "two", "three", "after"])
    #expect(claims[1...3].map(\.id) == ids)
    #expect(container.names("tmp").isEmpty)
  }

  @Test func `A batch that does not fit publishes nothing and throws mailboxFull`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: AppGroupMailboxLimits(maxMessages: 3))
    try mailbox.enqueue("a")
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try mailbox.enqueue(contentsOf: ["b", "c", "d"])
    }
    #expect(container.names("pending").count == 1)
    #expect(container.names("tmp").isEmpty)
    try mailbox.enqueue(contentsOf: ["b", "c"])
    #expect(try mailbox.claimPending().map(\.message) == ["a", "b", "c"])
  }

  @Test func `discardOldest makes room for a whole batch and reports each discard`() throws {
    let container = try TemporaryContainer()
    let diagnostics = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: AppGroupMailboxLimits(maxMessages: 3), overflowPolicy: .discardOldest,
      diagnostics: diagnostics)
    try mailbox.enqueue(contentsOf: ["a", "b", "c"])
    try mailbox.enqueue(contentsOf: ["d", "e"])
    #expect(diagnostics.count(.oldestMessageDiscarded) == 2)
    #expect(try mailbox.claimPending().map(\.message) == ["c", "d", "e"])
  }

  @Test func `An oversized message in a batch writes nothing`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: AppGroupMailboxLimits(maxPayloadBytes: 300))
    let big = String(repeating: "x", count: 400)
    #expect(throws: AppGroupMailboxError.self) { try mailbox.enqueue(contentsOf: ["ok", big]) }
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
  }

  @Test func `An empty batch does nothing`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    #expect(try mailbox.enqueue(contentsOf: []) == [])
    #expect(container.names("pending").isEmpty)
  }
}
