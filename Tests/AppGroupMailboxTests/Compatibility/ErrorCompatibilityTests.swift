import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Code written against the Apple package's `MailboxError` (payload-free `ioFailure`) compiles
/// and behaves the same here, and the cause of an I/O failure is still there.
@Suite struct ErrorCompatibilityTests {
  /// An enqueue whose rename fails with EIO (a debug build's fault injection).
  private func failingEnqueue(_ mailbox: AppGroupMailbox<String>) throws {
    let (thrown, _) = thrownError(under: [.init(call: "renameat2", errno: EIO)]) {
      try mailbox.enqueue("x")
    }
    if let thrown { throw thrown }
  }

  @Test func `The Apple package's ioFailure patterns match an I/O failure with a cause`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    typealias MailboxError = AppGroupMailbox<String>.MailboxError
    // catch MailboxError.ioFailure
    var caught = false
    do {
      try failingEnqueue(mailbox)
    } catch MailboxError.ioFailure {
      caught = true
    }
    #expect(caught)
    // #expect(throws: MailboxError.ioFailure)
    #expect(throws: MailboxError.ioFailure) { try failingEnqueue(mailbox) }
    // error == .ioFailure, and the cause is still there.
    do {
      try failingEnqueue(mailbox)
      Issue.record("no error")
    } catch let error as MailboxError {
      #expect(error == .ioFailure)
      #expect(error != .mailboxFull)
      #expect(
        error.ioFailureCause
          == .init(
            operation: "enqueue", systemCall: "renameat2", errno: EIO,
            role: "tmp area and the pending area"))
      guard case .ioFailure(let cause) = error else {
        Issue.record("not an ioFailure: \(error)")
        return
      }
      #expect(cause.errno == EIO)
      #expect(
        error.localizedDescription.contains(
          "enqueue: renameat2 on the tmp area and the pending area failed"))
      #expect(Set([error, MailboxError.ioFailure]).count == 1)
    }
    #expect(container.names("pending").isEmpty)
  }

  @Test func `The Apple package's other comparisons work unchanged`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: .init(maxMessages: 1))
    typealias MailboxError = AppGroupMailbox<String>.MailboxError
    try mailbox.enqueue("A")
    #expect(throws: MailboxError.mailboxFull) { try mailbox.enqueue("B") }
    do {
      try mailbox.enqueue("B")
    } catch let error as MailboxError {
      #expect(error == .mailboxFull)
      #expect(error != .ioFailure)
      #expect(error.ioFailureCause == nil)
    }
    let claim = try #require(try mailbox.claimPending().first)
    try claim.acknowledge()
    #expect(throws: MailboxError.claimNoLongerExists) { try claim.acknowledge() }
    #expect(MailboxError.invalidLimit("a") != .invalidLimit("b"))
    #expect(
      MailboxError.payloadTooLarge(actualBytes: 2, maximumBytes: 1)
        == .payloadTooLarge(actualBytes: 2, maximumBytes: 1))
    #expect(MailboxError.ioFailure.ioFailureCause == .unspecified)
    #expect(MailboxError.ioFailure.localizedDescription.contains("unspecified"))
  }
}
