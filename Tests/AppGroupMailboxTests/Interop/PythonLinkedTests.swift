import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The Python reader's hard-linked names and its mount check, against the Swift library (found
/// by a review of this session's first fixes): a flagged linked file stopped every Python claim
/// and added a copy to quarantine at each; a copy that could not be made in tmp/ failed the
/// claim; discard-oldest evicted a valid message while a linked one stayed; and a mailbox on an
/// overlay whose layers are two filesystems no longer opened.
@Suite(.enabled(if: PythonSpool.available, "python3 is not installed"))
struct PythonLinkedTests {
  /// Links the newest pending file of `container` to a name outside the mailbox and waits
  /// until the link is past its one-second grace (its ctime); returns the pending name.
  func linkNewest(_ container: TemporaryContainer) throws -> String {
    let name = try #require(container.names("pending").last)
    #expect(link(container.path("pending", name), container.url.path + "/outside") == 0)
    try waitOutGrace(container.path("pending", name))
    return name
  }

  /// Waits until `path` was last changed (its ctime) more than the one-second grace ago.
  func waitOutGrace(_ path: String) throws {
    var info = stat()
    try #require(lstat(path, &info) == 0)
    let changed = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
    #expect(waitUntil(deadline: 30) { Date().timeIntervalSince1970 > changed + 1.2 })
  }

  @Test func `Python discard-oldest quarantines a linked message before it evicts a valid one`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest)
    let valid = try mailbox.enqueue(Data("1".utf8)).id
    try mailbox.enqueue(Data("2".utf8))
    _ = try linkNewest(container)
    let python = try #require(try PythonSpool.enqueue(["3"], into: container).first)
    #expect(python.outcome == "published")
    let pending = container.names("pending").compactMap(PendingName.init(parsing:))
    #expect(pending.map(\.id) == [valid, try #require(UUID(uuidString: python.id))])
    #expect(container.quarantineReasons() == ["unsafe"])
  }

  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (under CI=true it must work)"))
  func `A flagged linked message is passed over by the Python reader, not copied again`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let other = try mailbox.enqueue(Data("2".utf8)).id
    let name = try #require(container.names("pending").first)
    #expect(link(container.path("pending", name), container.url.path + "/outside") == 0)
    let path = container.path("pending", name)
    let flagged = try Processes.run("/usr/bin/chattr", ["+i", path])
    try #require(flagged.status == 0, "chattr +i failed: \(flagged.stderr)")
    defer {
      withExtendedLifetime(container) { _ = try? Processes.run("/usr/bin/chattr", ["-i", path]) }
    }
    try waitOutGrace(path)  // chattr changed it too
    var delivered: [String] = []
    for _ in 0..<3 { delivered += try PythonSpool.run("drain", container).lines }
    #expect(delivered.count == 1 && delivered[0].contains(other.uuidString.lowercased()))
    #expect(container.names("pending") == [name])
    #expect(container.names("quarantine").isEmpty)
  }

  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (under CI=true it must work)"))
  func `A linked message whose copy cannot be made is quarantined by rename`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let name = try linkNewest(container)
    let tmp = container.area("tmp").path
    let flagged = try Processes.run("/usr/bin/chattr", ["+i", tmp])
    try #require(flagged.status == 0, "chattr +i failed: \(flagged.stderr)")
    defer {
      withExtendedLifetime(container) { _ = try? Processes.run("/usr/bin/chattr", ["-i", tmp]) }
    }
    let drained = try PythonSpool.run("drain", container)
    #expect(drained.lines.isEmpty)
    #expect(!container.names("pending").contains(name), "\(drained.stderr)")
    #expect(container.quarantineReasons() == ["unsafe"])
  }

  @Test(.enabled(if: isRoot || isCI, "mounting needs root (under CI=true it must work)"))
  func `A mailbox on an overlay whose layers are two filesystems opens in Python`() throws {
    let container = try TemporaryContainer()
    let root = container.url.path
    let merged = try mountTwoFilesystemOverlay(in: root)
    defer { unmountOverlay(in: root) }
    for message in ["1", "2"] {
      let enqueued = try Processes.start(
        PythonSpool.python, [PythonSpool.script.path, "enqueue", merged, "jobs"],
        stdin: Data(message.utf8)
      ).finish()
      #expect(enqueued.status == 0, "\(enqueued.stderr)")
    }
  }
}
