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
  }

  @Test func `An I/O failure in a namespace still there keeps its cause`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let failure = AppGroupMailboxError.ioFailure(
      .init(operation: "claim", systemCall: "openat", errno: 5, role: "pending area"))
    #expect(throws: failure) { try mailbox.spool.removalReported { throw failure } }
  }
}
