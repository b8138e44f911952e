import Foundation
import Testing

@testable import AppGroupMailbox

/// A claim or drain whose namespace is deleted while it lists (before any watcher reports the
/// removal) gets ``AppGroupMailboxError/mailboxDirectoryRemoved``, as a wait would, not an I/O failure.
@Suite struct RemovedWhileClaimingTests {
  @Test func `A listing in a deleted namespace is reported as the directory removed`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let spool = mailbox.spool
    try FileManager.default.removeItem(at: container.area(""))
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    // Unmapped, the listing of delayed/ fails with ENOENT (an I/O failure of "promote").
    #expect(throws: AppGroupMailboxError.self) { try spool.promoteDue(diagnostics: &diagnostics) }
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) {
      try spool.removalReported { try spool.promoteDue(diagnostics: &diagnostics) }
    }
  }

  @Test func `A claim in a deleted namespace throws mailboxDirectoryRemoved`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    try FileManager.default.removeItem(at: container.area(""))
    clock.advance(2)  // the recovery sweep is due: it lists claimed/
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try mailbox.claimPending() }
    // So do the inspector's listings (mailboxctl watch exited 74 naming ENOENT, not 66).
    let inspector = mailbox.inspector
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try inspector.status() }
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try inspector.entries() }
  }

  /// A mailbox that claimed before knows its pending messages from inotify, and the deleted
  /// directory's open descriptor keeps the watch from reporting the deletion: its claims found
  /// nothing and returned [] (and a `drainPending` returned normally) with the namespace gone
  /// (found by an adversarial review).
  @Test func `A claim that finds nothing in a deleted namespace it claimed from before throws`()
    async throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("A")
    for claim in try mailbox.claimPending() { try claim.acknowledge() }
    #expect(try mailbox.claimPending().isEmpty)
    try FileManager.default.removeItem(at: container.area(""))
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try mailbox.claimPending() }
    await #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) {
      try await mailbox.drainPending { _ in }
    }
    // Nor does a held mailbox's claim, which returns before it looks at pending/.
    let other = try TemporaryContainer()
    let held: AppGroupMailbox<String> = try other.mailbox()
    try held.enqueue("A")
    for claim in try held.claimPending() { try claim.acknowledge() }
    try held.pause()
    try FileManager.default.removeItem(at: other.area(""))
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try held.claimPending() }
  }

  /// A recursive removal (`rm -r`, `FileManager.removeItem`) deletes the areas before the
  /// namespace: a claim that lists in between finds the namespace still linked and `pending/`
  /// gone (a CI run's `drain --follow` exited 74 with "getdents64 on the pending area failed").
  @Test(arguments: ["pending", "claimed", "delayed"])
  func `A claim while a recursive removal has deleted an area throws mailboxDirectoryRemoved`(
    area: String
  ) throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    try FileManager.default.removeItem(at: container.area(area))
    #expect(FileManager.default.fileExists(atPath: container.area("").path))
    clock.advance(2)  // the recovery sweep is due: it lists claimed/
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try mailbox.claimPending() }
    // So do the inspector's listings (mailboxctl watch exited 74 naming ENOENT, not 66).
    let inspector = mailbox.inspector
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try inspector.status() }
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try inspector.entries() }
  }

  @Test func `An I/O failure in a namespace still there keeps its cause`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let failure = AppGroupMailboxError.ioFailure(
      .init(operation: "claim", systemCall: "openat", errno: 5, role: "pending area"))
    #expect(throws: failure) { try mailbox.spool.removalReported { throw failure } }
  }
}

/// An enqueue into a deleted namespace is told so too (found by a new-user trial: it threw an
/// I/O failure of "openat on the tmp area").
@Suite struct RemovedWhileEnqueueingTests {
  @Test func `An enqueue or a batch into a deleted namespace throws mailboxDirectoryRemoved`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try FileManager.default.removeItem(at: container.area(""))
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) { try mailbox.enqueue("A") }
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) {
      try mailbox.enqueue(contentsOf: ["B", "C"])
    }
  }

  @Test func `Error texts say what to do`() {
    #expect(
      AppGroupMailboxError.invalidNamespace.errorDescription
        == "The mailbox namespace is invalid: use 1 to 64 bytes of A-Z a-z 0-9 . _ -, not "
        + "starting with - and not only dots.")
    #expect(
      AppGroupMailboxError.mailboxDeallocated.errorDescription
        == "The mailbox has been deallocated; keep a reference to the mailbox while you hold "
        + "its claims.")
    #expect(
      AppGroupMailboxError.mailboxFull.errorDescription
        == "The mailbox is full (its maxMessages bound): wait for consumers, raise maxMessages, "
        + "or use the discardOldest overflow policy.")
    #expect(
      AppGroupMailboxError.invalidLimit("maxMessages").errorDescription
        == "The value of 'maxMessages' is out of range or invalid.")
  }
}
