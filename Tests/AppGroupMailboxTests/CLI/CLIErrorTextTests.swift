import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// What mailboxctl prints for a library error: the cause once, with its operation, system call,
/// the path's role and errno.
@Suite struct CLIErrorTextTests {
  @Test func `An I/O failure is printed once, as its cause, with the exit status for I/O`() {
    let failure = CommandFailure(
      AppGroupMailboxError.ioFailure(
        .init(operation: "enqueue", systemCall: "write", errno: ENOSPC)),
      while: "enqueue")
    #expect(failure.message == "enqueue: write failed: No space left on device (errno 28)")
    #expect(failure.status == .ioError)
    let located = CommandFailure(
      AppGroupMailboxError.ioFailure(
        .init(operation: "claim", systemCall: "fsync", errno: EIO, role: "pending area")),
      while: "drain")
    #expect(
      located.message == "claim: fsync on the pending area failed: Input/output error (errno 5)")
    // An error without a known cause keeps the command's word and the library's sentence.
    let unspecified = CommandFailure(AppGroupMailboxError.ioFailure, while: "enqueue")
    #expect(unspecified.message == "enqueue: A mailbox file operation failed: unspecified.")
  }
}
