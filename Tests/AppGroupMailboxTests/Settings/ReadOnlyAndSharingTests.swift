import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Cases C24 and C25: looking at a mailbox writes nothing, and its modes never change after
/// creation. Real processes as real other users (setpriv(1)) on a real read-only tmpfs.
@Suite(.enabled(if: isRoot || isCI, "needs root: mounts a tmpfs and runs as other users"))
struct ReadOnlyAndSharingTests {
  /// A group no test user is otherwise in, and three users of it (none needs a passwd entry).
  static let group = "60400"
  static let userA = "60401"
  static let userB = "60402"
  static let reader = "60403"

  /// Runs `mailboxctl arguments` as `user` in `group` only.
  func run(as user: String, group: String = group, _ arguments: [String]) throws -> Finished {
    try Processes.start(
      URL(fileURLWithPath: "/usr/bin/setpriv"),
      ["--reuid=\(user)", "--regid=\(group)", "--clear-groups", Mailboxctl.url.path] + arguments
    ).finish(deadline: 60)
  }

  /// The read-only commands' outputs, ages left out (they move with the clock).
  func looks(_ location: [String], id: String, quarantined: String) throws -> [String: Finished] {
    var results: [String: Finished] = [:]
    results["status"] = try Mailboxctl.run(["status"] + location + ["--json"])
    results["list"] = try Mailboxctl.run(["list"] + location + ["--json"])
    results["show"] = try Mailboxctl.run(["show"] + location + [id, "--json", "--message"])
    results["quarantine list"] = try Mailboxctl.run(["quarantine"] + location + ["list", "--json"])
    results["quarantine show"] = try Mailboxctl.run(
      ["quarantine"] + location + ["show", quarantined, "--json"])
    results["config"] = try Mailboxctl.run(["config"] + location + ["--json"])
    return results
  }

  func withoutAges(_ text: String) -> String {
    text.replacingOccurrences(
      of: #""oldestPendingAgeSeconds":[0-9.]+"#, with: "", options: .regularExpression)
  }

  @Test
  func `On a read-only tmpfs every looking command works and prints what it did before (C24)`()
    throws
  {
    let container = try TemporaryContainer()
    let mount = container.url.appendingPathComponent("ro").path
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    let mounted = try Processes.run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount])
    try #require(mounted.status == 0, "mount -t tmpfs failed: \(mounted.stderr)")
    defer { unmount(mount) }
    let location = ["--container", mount, "--namespace", "jobs"]
    // Filled in a scope of its own: a descriptor open for writing would keep the remount busy.
    let (id, quarantined) = try { () throws -> (String, String) in
      let raw = try AppGroupRawMailbox(
        containerURL: URL(fileURLWithPath: mount), namespace: "jobs")
      let id = try raw.enqueue(Data("{\"n\":1}".utf8)).id.uuidString.lowercased()
      try raw.enqueue(Data("2".utf8), messageType: "t")
      try Data("junk".utf8).write(
        to: URL(fileURLWithPath: mount + "/AppGroupMailbox/jobs/pending/foreign"))
      try raw.claimPending(limit: 1).first?.release()
      return (id, try #require(raw.inspector.entries(in: [.quarantined]).first).fileName)
    }()
    let before = try looks(location, id: id, quarantined: quarantined)
    let remounted = try Processes.run("/bin/mount", ["-o", "remount,ro", mount])
    try #require(remounted.status == 0, "remount,ro failed: \(remounted.stderr)")
    let after = try looks(location, id: id, quarantined: quarantined)
    for (name, result) in after.sorted(by: { $0.key < $1.key }) {
      #expect(result.status == 0, "\(name): \(result.stderr)")
      #expect(result.stderr == "", "\(name)")
      #expect(withoutAges(result.stdout) == withoutAges(before[name]!.stdout), "\(name)")
    }
    #expect(after["list"]!.lines.count == 3)
    let watch = try Mailboxctl.run(["watch"] + location + ["--count", "1", "--json"])
    #expect(watch.status == 0)
    #expect(watch.lines.count == 1)
    #expect(watch.stdout.contains("\"pending\":2"))
    let enqueue = try Mailboxctl.run(["enqueue"] + location + ["--data", "3"])
    #expect(enqueue.status == 69)
    #expect(
      enqueue.stderr
        == "mailboxctl: error: enqueue: cannot open the mailbox at \(mount)/AppGroupMailbox/jobs: "
        + "openat on the state file failed: Read-only file system (errno 30)\n")
    #expect(
      throws: AppGroupMailboxError.ioFailure(
        .init(
          operation: "open mailbox", systemCall: "openat", errno: EROFS))
    ) {
      _ = try AppGroupRawMailbox(containerURL: URL(fileURLWithPath: mount), namespace: "jobs")
    }
  }

  @Test func `A group member who may only read can look, and a write names EACCES (C24)`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let raw = try container.rawMailbox()
    let id = try raw.enqueue(Data("1".utf8)).id.uuidString.lowercased()
    try readOnlyForGroup(container)
    let modes = try modeList(container)
    for command in [["status"], ["list"], ["show", id], ["quarantine", "list"], ["config"]] {
      let result = try run(as: Self.reader, [command[0]] + location + command.dropFirst())
      #expect(result.status == 0, "\(command): \(result.stderr)")
      #expect(result.stderr == "", "\(command)")
    }
    let list = try run(as: Self.reader, ["list"] + location + ["--json"])
    #expect(try jsonLines(list.stdout).map { $0["id"] as? String } == [id])
    let enqueue = try run(as: Self.reader, ["enqueue"] + location + ["--data", "2"])
    #expect(enqueue.status == 69)
    #expect(
      enqueue.stderr
        == "mailboxctl: error: enqueue: cannot open the mailbox at "
        + "\(container.url.path)/AppGroupMailbox/jobs: openat on the state file failed: "
        + "Permission denied (errno 13) (the mailbox's files do not let this user do that; for a "
        + "group-shared mailbox, join its group, 'usermod -aG GROUP USER', then log in again)\n")
    #expect(try modeList(container) == modes)
  }

  /// Gives the group read and search but no write on everything in `container`: 0750
  /// directories, 0640 files.
  func readOnlyForGroup(_ container: TemporaryContainer) throws {
    #expect(chown(container.url.path, 0, gid_t(Self.group)!) == 0)
    #expect(chmod(container.url.path, 0o750) == 0)
    let tree = try Processes.run(
      "/bin/sh",
      [
        "-c",
        "chgrp -R \(Self.group) \"$0\" && find \"$0\" -type d -exec chmod 0750 {} + "
          + "&& find \"$0\" -type f -exec chmod 0640 {} +",
        container.url.path + "/AppGroupMailbox",
      ])
    try #require(tree.status == 0, "\(tree.stderr)")
  }

  /// `mode path` of everything in the namespace, sorted.
  func modeList(_ container: TemporaryContainer) throws -> [String] {
    let result = try Processes.run(
      "/usr/bin/find",
      [container.url.path + "/AppGroupMailbox", "-printf", "%m %g %P\n"])
    return result.lines.sorted()
  }

  @Test func `A root command without the sharing flag never narrows a shared mailbox (C25)`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(chown(container.url.path, 0, gid_t(Self.group)!) == 0)
    #expect(chmod(container.url.path, 0o2770) == 0)
    let location = container.arguments()
    let created = try run(as: Self.userA, ["create"] + location + ["--group-shared"])
    #expect(created.status == 0, "\(created.stderr)")
    let enqueued = try run(as: Self.userA, ["enqueue"] + location + ["--data", "\"from A\""])
    #expect(enqueued.status == 0, "\(enqueued.stderr)")
    let modes = try modeList(container)
    #expect(
      modes.filter { !$0.hasSuffix(".msg") }
        == [
          "2770 60400 ", "2770 60400 jobs", "2770 60400 jobs/claimed", "2770 60400 jobs/delayed",
          "2770 60400 jobs/pending", "2770 60400 jobs/quarantine", "2770 60400 jobs/tmp",
          "660 60400 jobs/settings", "660 60400 jobs/state",
        ])
    // Root looks, maintains and writes, all without --group-shared.
    for command in [["status"], ["list"], ["maintain"], ["config"], ["quarantine", "list"]] {
      let result = try Mailboxctl.run([command[0]] + location + command.dropFirst())
      #expect(result.status == 0, "\(command): \(result.stderr)")
    }
    let rootEnqueue = try Mailboxctl.run(["enqueue"] + location + ["--data", "\"from root\""])
    #expect(rootEnqueue.status == 0)
    let after = try modeList(container)
    #expect(after.filter { !$0.hasSuffix(".msg") } == modes.filter { !$0.hasSuffix(".msg") })
    #expect(
      after.filter { $0.hasSuffix(".msg") }.map { $0.prefix(10) } == ["660 60400 ", "660 60400 "])
    // B, in the same group, claims both.
    let drained = try run(as: Self.userB, ["drain"] + location)
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(
      try jsonLines(drained.stdout).map { $0["message"] as? String } == ["from A", "from root"])
  }
}
