import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 17, item 1 across users (as the C24 and C25 tests do): a group member holds and
/// resumes a group-shared mailbox another member created, without changing a mode; a member
/// who may only read sees the hold and cannot change it.
@Suite(.enabled(if: isRoot || isCI, "needs root: runs as other users"))
struct HoldSharingTests {
  static let userA = ReadOnlyAndSharingTests.userA
  static let userB = ReadOnlyAndSharingTests.userB
  static let reader = ReadOnlyAndSharingTests.reader
  /// The C24/C25 suite's helpers: running as another user, modes, read-only trees.
  let shared = ReadOnlyAndSharingTests()

  func run(as user: String, _ arguments: [String]) throws -> Finished {
    try shared.run(as: user, arguments)
  }

  @Test func `A group member holds and resumes a shared mailbox and no mode changes`() throws {
    let container = try TemporaryContainer()
    #expect(chown(container.url.path, 0, gid_t(ReadOnlyAndSharingTests.group)!) == 0)
    #expect(chmod(container.url.path, 0o2770) == 0)
    let location = container.arguments()
    let created = try run(as: Self.userA, ["create"] + location + ["--group-shared"])
    #expect(created.status == 0, "\(created.stderr)")
    #expect(try run(as: Self.userA, ["enqueue"] + location + ["--data", "1"]).status == 0)
    let modes = try shared.modeList(container)
    let held = try run(as: Self.userB, ["hold"] + location)
    #expect(held.status == 0, "\(held.stderr)")
    #expect(held.stdout == "jobs: held\n")
    #expect(try shared.modeList(container) == modes)
    // A, who created it, finds nothing to claim while B's hold lasts; A's enqueue goes on.
    let drained = try run(as: Self.userA, ["drain"] + location)
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(drained.stdout == "")
    #expect(try run(as: Self.userA, ["enqueue"] + location + ["--data", "2"]).status == 0)
    let resumed = try run(as: Self.userA, ["resume"] + location)
    #expect(resumed.stdout == "jobs: resumed\n", "\(resumed.stderr)")
    let delivered = try run(as: Self.userB, ["drain"] + location)
    #expect(try jsonLines(delivered.stdout).map { $0["message"] as? Int } == [1, 2])
    let after = try shared.modeList(container)
    #expect(after.filter { !$0.hasSuffix(".msg") } == modes.filter { !$0.hasSuffix(".msg") })
  }

  @Test func `A member who may only read sees the hold and cannot change it`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let raw = try container.rawMailbox()
    try raw.pause()
    try shared.readOnlyForGroup(container)
    let status = try run(as: Self.reader, ["status"] + location + ["--json"])
    #expect(status.status == 0, "\(status.stderr)")
    #expect(try jsonLines(status.stdout).first?["held"] as? Bool == true)
    for command in ["hold", "resume"] {
      let refused = try run(as: Self.reader, [command] + location)
      #expect(refused.status == 69)
      #expect(
        refused.stderr
          == "mailboxctl: error: \(command): cannot open the mailbox at "
          + "\(container.url.path)/AppGroupMailbox/jobs: openat on the state file failed: "
          + "Permission denied (errno 13) (the mailbox's files do not let this user do that; for a "
          + "group-shared mailbox, join its group, 'usermod -aG GROUP USER', then log in again)\n")
    }
    #expect(raw.isHeld)
  }
}
