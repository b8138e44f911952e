import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A user who may not enter the container gets exit 69 naming EACCES from every command, not
/// "no such mailbox" (66): the mailbox is there, it cannot be opened. A real process as a real
/// other user (setpriv(1)).
@Suite(.enabled(if: isRoot || isCI, "needs root: runs mailboxctl as another user"))
struct CLIPermissionTests {
  /// A user and group no test otherwise uses (no passwd entry needed).
  static let user = "60411"
  static let group = "60410"

  /// Runs `mailboxctl arguments` as ``user`` in ``group`` only.
  func run(_ arguments: [String]) throws -> Finished {
    try Processes.start(
      URL(fileURLWithPath: "/usr/bin/setpriv"),
      ["--reuid=\(Self.user)", "--regid=\(Self.group)", "--clear-groups", Mailboxctl.url.path]
        + arguments
    ).finish(deadline: 60)
  }

  @Test func `A user outside the container's group gets 69 and EACCES from every command`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let id = try container.rawMailbox().enqueue(Data("1".utf8)).id.uuidString.lowercased()
    #expect(chmod(container.url.path, 0o700) == 0)
    let path = container.url.path + "/AppGroupMailbox/jobs"
    let commands: [[String]] = [
      ["status"], ["list"], ["show", id], ["config"], ["quarantine", "list"], ["drain"],
      ["claim"], ["maintain"], ["hold"], ["resume"], ["watch", "--count", "1"], ["events"],
      ["enqueue", "--data", "2"],
    ]
    for command in commands {
      let result = try run([command[0]] + location + command.dropFirst())
      #expect(result.status == 69, "\(command): \(result.stderr)")
      #expect(result.stdout == "", "\(command)")
      #expect(
        result.stderr.hasPrefix("mailboxctl: error: \(command[0]): cannot open the mailbox at "),
        "\(command): \(result.stderr)")
      #expect(result.stderr.contains(path), "\(command): \(result.stderr)")
      // With what it usually means (a new user's run of stop 35 got the errno alone).
      #expect(
        result.stderr.hasSuffix(
          "Permission denied (errno 13) (this user may not search a directory on the way; for "
            + "a group-shared container, join its group, 'usermod -aG GROUP USER', then log in "
            + "again)\n"), "\(command): \(result.stderr)")
    }
    #expect(try container.rawMailbox().inspector.entries(in: [.pending]).count == 1)
  }
}
