import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Root working in another user's mailbox (`sudo mailboxctl hold`, `config`, `enqueue`) leaves
/// nothing that user cannot read, and a group-shared container stays usable by its group
/// whatever mode its first namespace has. Real processes as real other users (setpriv(1)).
@Suite(.enabled(if: isRoot || isCI, "needs root: runs as other users"))
struct RootInUserMailboxTests {
  static let group = "60410"
  static let owner = "60411"
  static let member = "60412"

  func run(as user: String, _ arguments: [String]) throws -> Finished {
    try Processes.start(
      URL(fileURLWithPath: "/usr/bin/setpriv"),
      ["--reuid=\(user)", "--regid=\(Self.group)", "--clear-groups", Mailboxctl.url.path]
        + arguments
    ).finish(deadline: 60)
  }

  /// `owner group mode path` of everything below the container's mailbox root, sorted.
  func owners(_ container: TemporaryContainer) throws -> [String] {
    try Processes.run(
      "/usr/bin/find", [container.url.path + "/AppGroupMailbox", "-printf", "%U %G %m %P\n"]
    ).lines.sorted()
  }

  @Test func `Root's hold, config and enqueue in a user's private mailbox leave it the user's`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(chown(container.url.path, uid_t(Self.owner)!, gid_t(Self.group)!) == 0)
    #expect(chmod(container.url.path, 0o700) == 0)
    let location = container.arguments()
    for step in [["create"], ["enqueue", "--data", "\"from the owner\""]] {
      let result = try run(as: Self.owner, [step[0]] + location + step.dropFirst())
      #expect(result.status == 0, "\(step): \(result.stderr)")
    }
    for step in [
      ["hold"], ["resume"], ["config", "--max-messages", "5"],
      ["enqueue", "--data", "\"from root\""],
    ] {
      let result = try Mailboxctl.run([step[0]] + location + step.dropFirst())
      #expect(result.status == 0, "\(step): \(result.stderr)")
    }
    let entries = try owners(container)
    #expect(entries.count == 11)  // root, namespace, 5 areas, settings, state, 2 messages
    #expect(entries.filter { !$0.hasPrefix("\(Self.owner) \(Self.group) ") } == [])
    let drained = try run(as: Self.owner, ["drain"] + location)
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(
      try jsonLines(drained.stdout).map { $0["message"] as? String }
        == ["from the owner", "from root"])
    #expect(drained.stderr.contains("quarantined 0"), "\(drained.stderr)")
    let status = try run(as: Self.owner, ["config"] + location + ["--json"])
    #expect(status.status == 0)
    #expect(status.stdout.contains("\"maxMessages\":5"), "\(status.stdout)")
  }

  @Test func `A private first namespace in a group-shared container keeps the group's way in`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(chown(container.url.path, 0, gid_t(Self.group)!) == 0)
    #expect(chmod(container.url.path, 0o2770) == 0)
    let first = try Mailboxctl.run(["create"] + container.arguments(namespace: "privfirst"))
    #expect(first.status == 0, "\(first.stderr)")
    let shared = try Mailboxctl.run(
      ["create"] + container.arguments(namespace: "jobs") + ["--group-shared"])
    #expect(shared.status == 0, "\(shared.stderr)")
    let entries = try owners(container)
    #expect(entries.contains("0 \(Self.group) 2770 "), "\(entries)")
    #expect(entries.contains("0 \(Self.group) 700 privfirst"), "\(entries)")
    #expect(entries.contains("0 \(Self.group) 2770 jobs"), "\(entries)")
    let enqueued = try run(
      as: Self.member, ["enqueue"] + container.arguments(namespace: "jobs") + ["--data", "1"])
    #expect(enqueued.status == 0, "\(enqueued.stderr)")
    let drained = try run(as: Self.member, ["drain"] + container.arguments(namespace: "jobs"))
    #expect(try jsonLines(drained.stdout).map { $0["message"] as? Int } == [1])
  }
}
