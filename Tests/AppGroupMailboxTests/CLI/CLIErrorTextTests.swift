import Foundation
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

  @Test func `A mailbox that is not there says why when it is not simply missing`() throws {
    let container = try TemporaryContainer()
    let file = container.url.appendingPathComponent("file")
    #expect(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
    let base = container.url.appendingPathComponent("AppGroupMailbox")
    try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    #expect(FileManager.default.createFile(atPath: base.path + "/plain", contents: nil))
    let cases: [([String], String)] = [
      (
        ["--container", file.path, "--namespace", "q"],
        "no such mailbox: \(file.path)/AppGroupMailbox/q: lstat failed: Not a directory (errno 20)"
      ),
      (
        ["--container", container.url.path, "--namespace", "plain"],
        "no such mailbox: \(base.path)/plain is not a directory"
      ),
      (
        ["--container", container.url.path, "--namespace", "absent"],
        "no such mailbox: \(base.path)/absent"
      ),
    ]
    for (arguments, message) in cases {
      for command in ["status", "drain", "config"] {
        let result = try Mailboxctl.run([command] + arguments)
        #expect(result.status == 66)
        #expect(result.stderr == "mailboxctl: error: \(command): \(message)\n")
      }
    }
  }
}
