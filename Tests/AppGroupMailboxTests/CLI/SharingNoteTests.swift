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
    #expect(!shared.stderr.contains("is private"))
  }

  /// Found by a new user: `create --group-shared` as root in a container it made itself gave a
  /// mailbox of group `root`, which no one else could use, without a word.
  @Test func `A group-shared mailbox in a container create made names the group`() throws {
    let container = try TemporaryContainer()
    let made = container.url.appendingPathComponent("made").path
    let created = try Mailboxctl.run(
      ["create", "--container", made, "--namespace", "own", "--group-shared"])
    #expect(created.status == 0)
    let group = getgrgid(getegid()).map { "'" + String(cString: $0.pointee.gr_name) + "'" }
    #expect(
      created.stderr
        == "mailboxctl: create: made the container \(made) too, with this process's own group, "
        + "\(group ?? String(getegid())): only its members may use the mailbox; to share it with "
        + "another group, 'chgrp -R GROUP \(made)'\n")
  }

  /// A second new user: the set-up the docs describe (a setgid container of the group, made
  /// first) got that note too when the group was the creator's own.
  @Test func `A group-shared mailbox in a setgid container of the creator's group gets no note`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(chmod(container.url.path, 0o2770) == 0)
    let created = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "own") + ["--group-shared"])
    #expect(created.status == 0)
    #expect(created.stderr == "")
  }

  @Test(.enabled(if: isRoot || isCI, "needs root to give the container to another group"))
  func `A group-shared mailbox in a container without setgid names both groups`() throws {
    let container = try TemporaryContainer()
    try #require(chown(container.url.path, UInt32.max, 65_534) == 0)
    #expect(chmod(container.url.path, 0o770) == 0)
    let created = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "plain") + ["--group-shared"])
    #expect(created.status == 0)
    let own = getgrgid(getegid()).map { String(cString: $0.pointee.gr_name) }
    let other = getgrgid(65_534).map { String(cString: $0.pointee.gr_name) }
    let path = container.url.path
    #expect(
      created.stderr
        == "mailboxctl: create: the new mailbox \(path)/AppGroupMailbox/plain has group "
        + "\(own.map { "'\($0)'" } ?? String(getegid())), this process's own, not its container's, "
        + "\(other.map { "'\($0)'" } ?? "65534"): the container is not setgid; give it the "
        + "container's group with 'chgrp -R \(other ?? "65534") \(path)/AppGroupMailbox' (and "
        + "'chmod g+s \(path)' for what is made there next)\n")
  }

  @Test(.enabled(if: isRoot || isCI, "needs root to give the container to another group"))
  func `A group-shared mailbox in a container of another group gets no note`() throws {
    let container = try TemporaryContainer()
    try #require(chown(container.url.path, UInt32.max, 65_534) == 0)
    #expect(chmod(container.url.path, 0o2770) == 0)
    let created = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "other") + ["--group-shared"])
    #expect(created.status == 0)
    #expect(created.stderr == "")
  }

  /// A new user's container made with mkdir (the user's own group, no setgid bit) got no note:
  /// the mailbox is the group's, but what another user makes there is not.
  @Test func `A group-shared mailbox in a plain container of the creator's group says so`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(chmod(container.url.path, 0o770) == 0)
    let created = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "own") + ["--group-shared"])
    #expect(created.status == 0)
    let group = getgrgid(getegid()).map { "'" + String(cString: $0.pointee.gr_name) + "'" }
    let path = container.url.path
    #expect(
      created.stderr
        == "mailboxctl: create: the container \(path) is not setgid: the new mailbox has its "
        + "group, \(group ?? String(getegid())), but what other users make there takes their "
        + "own group; 'chmod g+s \(path)' makes it take \(group ?? String(getegid()))\n")
  }

  @Test func `A private mailbox in a private container gets no note`() throws {
    let container = try TemporaryContainer()
    #expect(chmod(container.url.path, 0o700) == 0)
    let created = try Mailboxctl.run(["create"] + container.arguments())
    #expect(created.status == 0)
    #expect(created.stderr == "")
  }
}
