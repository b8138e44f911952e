import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `migrate` in a group-shared mailbox, run by one member of the group (from an adversarial
/// session with several Unix users): it never quarantines another member's files it may not
/// read, and the old format's lock it creates is the group's too.
@Suite struct MigrationSharingTests {
  /// Creates a group-shared mailbox `jobs` that keeps the fixture's 2026 messages and puts the
  /// Apple package's spool (Fixtures/apple-spool-0.2.1) into it.
  func sharedMailboxWithOldSpool() throws -> TemporaryContainer {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--group-shared"] + MigrationTests.longLived)
    #expect(created.status == 0, "\(created.stderr)")
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    return container
  }

  @Test func `The lock migrate creates in a group-shared mailbox is the group's`() throws {
    let container = try sharedMailboxWithOldSpool()
    let lock = container.url.appendingPathComponent("AppGroupMailbox/jobs/.mailbox.lock").path
    #expect(unlink(lock) == 0)  // the fixture's own, 0644
    let migrated = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(migrated.status == 0, "\(migrated.stderr)")
    var info = stat()
    #expect(lstat(lock, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o660)
  }

  @Test(.enabled(if: isRoot || isCI, "needs root: runs migrate as another user"))
  func `Files of another member migrate may not read stop it with nothing changed`() throws {
    let container = try sharedMailboxWithOldSpool()
    let (member, other, group) = (uid_t(60441), uid_t(60442), gid_t(60440))
    let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs").path
    #expect(chown(container.url.path, member, group) == 0)
    #expect(chmod(container.url.path, 0o2770) == 0)
    for path in try FileManager.default.subpathsOfDirectory(atPath: container.url.path) {
      #expect(lchown(container.url.path + "/" + path, member, group) == 0, "\(path)")
    }
    let old = try MigrationTests.legacyNames(container)
    for name in old {
      #expect(chown(namespace + "/" + name, other, group) == 0)
      #expect(chmod(namespace + "/" + name, 0o600) == 0)
    }
    let migrated = try Processes.start(
      URL(fileURLWithPath: "/usr/bin/setpriv"),
      ["--reuid=\(member)", "--regid=\(group)", "--clear-groups", Mailboxctl.url.path, "migrate"]
        + container.arguments()
    ).finish(deadline: 60)
    #expect(migrated.status == 74, "\(migrated.stderr)")
    #expect(
      migrated.stderr.contains(
        "faccessat on the message file failed: Permission denied (errno 13)"),
      "\(migrated.stderr)")
    #expect(try MigrationTests.legacyNames(container).sorted() == old.sorted())
    #expect(container.names("quarantine") == [])
    #expect(container.names("pending") == [])
  }
}
