import Foundation
import Testing

@testable import AppGroupMailbox

/// A drain whose namespace is deleted while it claims (before its watcher reports the removal)
/// gets ``AppGroupMailboxError/mailboxDirectoryRemoved``, as a wait would, not an I/O failure.
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

  @Test func `An I/O failure in a namespace still there keeps its cause`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let failure = AppGroupMailboxError.ioFailure(
      .init(operation: "claim", systemCall: "openat", errno: 5, role: "pending area"))
    #expect(throws: failure) { try mailbox.spool.removalReported { throw failure } }
  }
}
