import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// An area or `state` that is the wrong kind of entry is named with what it is: a FIFO in place
/// of `state` was reported as "fstat on the state file failed: Invalid argument" followed by
/// every possible cause, and a symlinked `settings` as a bare ELOOP (reviews of stop 33).
@Suite struct CLIUnusableEntryTests {
  /// `mailboxctl status`'s stderr on the namespace `jobs` of `container`.
  private func statusError(_ container: TemporaryContainer) throws -> (Int32, String) {
    let result = try Mailboxctl.run(["status"] + container.arguments())
    #expect(result.stdout == "")
    return (result.status, result.stderr)
  }

  @Test func `A FIFO, a directory or a second link as state is named as such`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    let state = namespace + "/state"
    let prefix = "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(state) is "
    try FileManager.default.moveItem(atPath: state, toPath: namespace + "/state.kept")
    #expect(mkfifo(state, 0o600) == 0)
    #expect(
      try statusError(container)
        == (
          69,
          prefix + "a FIFO, not a regular file with one link, which a mailbox refuses "
            + "(docs/SECURITY.md; fstat on the state file failed: Invalid argument (errno 22))\n"
        ))
    try FileManager.default.removeItem(atPath: state)
    try FileManager.default.moveItem(atPath: namespace + "/state.kept", toPath: state)
    try FileManager.default.linkItem(atPath: state, toPath: namespace + "/state.second")
    #expect(
      try statusError(container)
        == (
          69,
          prefix + "a file with 2 links, not a regular file with one link, which a mailbox "
            + "refuses (docs/SECURITY.md; fstat on the state file failed: Invalid argument "
            + "(errno 22))\n"
        ))
  }

  @Test func `A symbolic link as an area is named as such`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    try FileManager.default.moveItem(
      atPath: namespace + "/pending", toPath: container.url.path + "/elsewhere")
    try FileManager.default.createSymbolicLink(
      atPath: namespace + "/pending", withDestinationPath: container.url.path + "/elsewhere")
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(namespace)"
            + "/pending is a symbolic link, not a directory, which a mailbox refuses "
            + "(docs/SECURITY.md; openat on the pending area failed: Not a directory "
            + "(errno 20))\n"
        ))
  }

  @Test func `A symbolic link as settings gives the recovery hint`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    try FileManager.default.moveItem(
      atPath: namespace + "/settings", toPath: namespace + "/settings.kept")
    try FileManager.default.createSymbolicLink(
      atPath: namespace + "/settings", withDestinationPath: "settings.kept")
    #expect(
      throws: AppGroupMailboxError.invalidLimit("settings: a symbolic link, not a regular file")
    ) {
      _ = try container.rawMailbox()
    }
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): its settings "
            + "file cannot be used: a symbolic link, not a regular file; to recover, move "
            + "\(namespace)/settings away (the mailbox then has the default settings) and set "
            + "yours again with 'mailboxctl config'\n"
        ))
  }
}
