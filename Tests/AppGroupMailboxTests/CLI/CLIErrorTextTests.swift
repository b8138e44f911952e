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

  /// A new user typed `mailboxctl enqueue ... '{"a":1}'` and was told only "unexpected
  /// argument".
  @Test func `A message given as an argument to enqueue is pointed to --data`() throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(["enqueue"] + container.arguments() + ["{\"a\":1}"])
    #expect(result.status == 64)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: unexpected argument '{\"a\":1}' (messages come from "
        + "--data JSON or standard input: < FILE)\nRun 'mailboxctl enqueue --help' for usage.\n")
    #expect(container.names("pending").isEmpty)
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
        "no such mailbox: \(file.path)/AppGroupMailbox/q: lstat failed: Not a directory (errno 20) "
          + "(\(file.path) is a regular file, not a directory)"
      ),
      (
        ["--container", container.url.path, "--namespace", "plain"],
        "no such mailbox: \(base.path)/plain is not a directory"
      ),
      (
        ["--container", container.url.path, "--namespace", "absent"],
        "no such mailbox: \(base.path)/absent ('mailboxctl namespaces --container "
          + "\(container.url.path)' lists the mailboxes there; 'mailboxctl create' makes one)"
      ),
      (
        ["--container", container.url.path + "/typo", "--namespace", "jobs"],
        "no such mailbox: \(container.url.path)/typo/AppGroupMailbox/jobs (there is no container "
          + "at \(container.url.path)/typo; 'mailboxctl create' makes it with the mailbox)"
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

  @Test func `A namespace that is a symbolic link is refused with 69 by every command`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(namespace: "real")
    let base = container.url.appendingPathComponent("AppGroupMailbox")
    try FileManager.default.createSymbolicLink(
      atPath: base.path + "/link", withDestinationPath: "real")
    let arguments = ["--container", container.url.path, "--namespace", "link"]
    for command in [["status"], ["drain"], ["claim"], ["config"], ["enqueue", "--data", "1"]] {
      let result = try Mailboxctl.run(command + arguments)
      #expect(result.status == 69, "\(command): \(result.stderr)")
      #expect(result.stderr.contains("\(base.path)/link"), "\(command): \(result.stderr)")
    }
    #expect(try container.rawMailbox(namespace: "real").inspector.status().depth == 0)
  }

  @Test func `A settings file that cannot be used names what is wrong, never a value`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let settings = container.url.appendingPathComponent("AppGroupMailbox/jobs/settings")
    let prefix =
      "mailboxctl: error: status: cannot open the mailbox at \(container.url.path)/AppGroupMailbox/jobs: "
    let cases: [(String, String)] = [
      ("not json", "its settings file cannot be used: not one JSON object"),
      (
        #"{"format":1,"maxMessages":"secret-value"}"#,
        "its settings file cannot be used: 'maxMessages' is missing or of the wrong type"
      ),
      (
        #"{"format":1,"maxMessages":5,"maxPayloadBytes":100,"messageLifetime":60,"#
          + #""maxQuarantinedFiles":10,"overflowPolicy":"secret-value","sharing":"private"}"#,
        "its settings file cannot be used: 'overflowPolicy' is neither rejectNewest nor "
          + "discardOldest"
      ),
      (
        #"{"format":1,"maxMessages":0,"maxPayloadBytes":100,"messageLifetime":60,"#
          + #""maxQuarantinedFiles":10,"overflowPolicy":"rejectNewest","sharing":"private"}"#,
        "its settings file cannot be used: 'maxMessages' is out of range"
      ),
      (
        #"{"format":9}"#,
        "its settings file has format 9, newer than this mailboxctl reads (formats 1 to 2); "
          + "use the version that wrote it"
      ),
    ]
    let recovery =
      "; to recover, move \(container.url.path)/AppGroupMailbox/jobs/settings away (the mailbox "
      + "then has the default settings, and no hold; its messages stay readable) and set yours "
      + "again with 'mailboxctl config' (and 'hold')"
    for (text, message) in cases {
      try Data((text + "\n").utf8).write(to: settings)
      let result = try Mailboxctl.run(["status"] + container.arguments())
      #expect(result.status == 69)
      let hint = message.hasPrefix("its settings file cannot be used") ? recovery : ""
      #expect(result.stderr == prefix + message + hint + "\n")
      #expect(!result.stderr.contains("secret-value"))
    }
    // The recovery the message gives works.
    try FileManager.default.removeItem(at: settings)
    let recovered = try Mailboxctl.run(
      ["config"] + container.arguments() + ["--max-messages", "7"])
    #expect(recovered.status == 0, "\(recovered.stderr)")
    #expect(try Mailboxctl.run(["status"] + container.arguments()).status == 0)
  }
}
