import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A dead letter that can be neither moved into `quarantine/` nor deleted names the system call
/// and errno that refused it (before, every cause but a chattr(1) flag read as a made-up EIO),
/// and leaves the message claimed for its holder to try again.
@Suite struct DeadLetterFailureTests {
  /// Dead-letters the only claim of a fresh mailbox under `rules`: the error's cause, and the
  /// mailbox and claim (a claim does not keep its mailbox alive).
  func refusedCause(limits: AppGroupMailboxLimits = .init(), _ rules: [FaultInjection.Rule])
    throws -> (
      AppGroupMailboxError.IOFailure, TemporaryContainer, AppGroupRawMailbox,
      AppGroupRawMailbox.Claim
    )
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: limits)
    try mailbox.enqueue(Data(#""L""#.utf8))
    let claim = try #require(try mailbox.claimPending().first)
    let (error, unfired) = FaultInjection.withRules(rules) {
      #expect(throws: AppGroupMailboxError.self) { try claim.deadLetter() }
    }
    #expect(unfired.isEmpty)
    let cause = try #require(error?.ioFailureCause, "\(String(describing: error))")
    #expect(container.names("claimed").count == 1)
    return (cause, container, mailbox, claim)
  }

  @Test func `A refused move into quarantine is named, not the delete after it`() throws {
    let (cause, container, mailbox, claim) = try refusedCause([
      .init(call: "renameat2", errno: ENOSPC), .init(call: "unlinkat", errno: EROFS),
    ])
    #expect(cause.operation == "dead-letter")
    #expect(cause.systemCall == "renameat2")
    #expect(cause.errno == ENOSPC)
    // Nothing was lost: the holder's next try goes through.
    try withExtendedLifetime(mailbox) { try claim.deadLetter() }
    #expect(container.names("claimed").isEmpty)
    #expect(container.quarantineReasons() == ["deadletter"])
  }

  @Test func `With no quarantine kept, the refused delete is named`() throws {
    let (cause, _, _, _) = try refusedCause(
      limits: .init(maxQuarantinedFiles: 0), [.init(call: "unlinkat", errno: EROFS)])
    #expect(cause.operation == "dead-letter")
    #expect(cause.systemCall == "unlinkat")
    #expect(cause.errno == EROFS)
  }

  @Test func `A quarantine area gone meanwhile is an error, not a claim that no longer exists`()
    throws
  {
    // ENOENT from the rename (quarantine/ deleted) while the claimed file is still there.
    let (cause, container, mailbox, claim) = try refusedCause([
      .init(call: "renameat2", errno: ENOENT)
    ])
    #expect(cause.systemCall == "renameat2")
    #expect(cause.errno == ENOENT)
    // The holder still holds it and can try again.
    try withExtendedLifetime(mailbox) { try claim.deadLetter() }
    #expect(container.quarantineReasons() == ["deadletter"])
  }
}
