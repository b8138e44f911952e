import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Found by a new user: a mailbox made without `--group-shared` in a container shared with a
/// group is private, and its sharing mode is fixed at creation; the group's other users only
/// got "Permission denied" later. The command that makes it now says so.
@Suite struct SharingNoteTests {
  func note(_ container: TemporaryContainer, namespace: String) -> String {
    "the new mailbox \(container.url.path)/AppGroupMailbox/\(namespace) is private (only its "
      + "owner may use it), though its container is shared with a group; for the group, remove "
      + "it (rm -r \(container.url.path)/AppGroupMailbox/\(namespace)) and make it with "
      + "'mailboxctl create --group-shared'\n"
  }

  @Test func `A private mailbox made in a group's container says how to share it`() throws {
    let container = try TemporaryContainer()
    #expect(chmod(container.url.path, 0o770) == 0)
    let enqueued = try Mailboxctl.run(
      ["enqueue"] + container.arguments(namespace: "a") + ["--data", "1"])
    #expect(enqueued.status == 0)
    #expect(enqueued.stderr.hasSuffix("mailboxctl: enqueue: " + note(container, namespace: "a")))
    let created = try Mailboxctl.run(["create"] + container.arguments(namespace: "b"))
    #expect(created.status == 0)
    #expect(created.stderr == "mailboxctl: create: " + note(container, namespace: "b"))
    let shared = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "c") + ["--group-shared"])
    #expect(shared.status == 0)
    #expect(shared.stderr == "")
  }

  @Test func `A private mailbox in a private container gets no note`() throws {
    let container = try TemporaryContainer()
    #expect(chmod(container.url.path, 0o700) == 0)
    let created = try Mailboxctl.run(["create"] + container.arguments())
    #expect(created.status == 0)
    #expect(created.stderr == "")
  }
}
