import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The Python implementation's layout against docs/SECURITY.md (found by a review of the docs
/// against both readers): it took a namespace starting with `-`, made `AppGroupMailbox/` 0700
/// in a setgid container (locking the group out of the group-shared namespaces made later), and
/// opened a mailbox with an area on another mount, where a quarantine move failed with EXDEV
/// and the file was deleted instead.
@Suite(.enabled(if: PythonSpool.available, "python3 is not installed"))
struct PythonLayoutTests {
  @Test func `A namespace starting with '-' is refused as invalid`() throws {
    let container = try TemporaryContainer()
    let refused = try Processes.start(
      PythonSpool.python, [PythonSpool.script.path, "enqueue", "--", container.url.path, "-abc"],
      stdin: Data("1".utf8)
    ).finish()
    #expect(refused.status == 2, "\(refused.stderr)")
    #expect(refused.stderr.hasSuffix("agm_spool.py: error: invalid namespace\n"))
    #expect(!FileManager.default.fileExists(atPath: container.url.path + "/AppGroupMailbox"))
  }

  @Test func `In a setgid container AppGroupMailbox is made for the group`() throws {
    let container = try TemporaryContainer()
    try #require(chmod(container.url.path, 0o2770) == 0, "chmod: errno \(errno)")
    _ = try PythonSpool.enqueue(["1"], into: container)
    var info = stat()
    try #require(stat(container.url.path + "/AppGroupMailbox", &info) == 0)
    #expect(info.st_mode & 0o7777 == 0o2770)
    // The private namespace itself stays private: only the directory above it is shared.
    try #require(stat(container.url.path + "/AppGroupMailbox/jobs", &info) == 0)
    #expect(info.st_mode & 0o777 == 0o700)
  }

  @Test(.enabled(if: isRoot || isCI, "a bind mount needs root (under CI=true it must work)"))
  func `An area on another mount is refused at open, and nothing is deleted`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let elsewhere = container.url.path + "/elsewhere"
    try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
    let quarantine = container.area("quarantine").path
    let mounted = try Processes.run("/bin/mount", ["--bind", elsewhere, quarantine])
    try #require(mounted.status == 0, "mount --bind failed: \(mounted.stderr)")
    defer { unmount(quarantine) }
    let id = UUID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let name = pendingName(micros: now - 1_000_000, sequence: 1, id: id)
    try container.plant("pending", name, Array("not a message".utf8))
    let drained = try PythonSpool.start("drain", container).finish()
    #expect(drained.status == 69, "\(drained.stderr)")
    #expect(
      drained.stderr == "agm_spool: error: open: Invalid cross-device link (errno 18)\n")
    #expect(container.names("pending") == [name])
  }
}

/// A message hard-linked under two pending names (found by the same review): the Swift reader
/// quarantines one name as a copy and delivers the other once; the Python reader renamed the
/// first link into quarantine, which left the second linked for ever, and it was never delivered.
extension PythonLayoutTests {
  @Test func `A message linked under two pending names is delivered once by the Python reader`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let id = UUID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let first = pendingName(micros: now - 2_000_000, sequence: 1, id: id)
    let second = pendingName(micros: now - 1_000_000, sequence: 2, id: id)
    try container.plant(
      "pending", first, envelope(id: id, micros: now - 2_000_000, text: "linked", type: ""))
    #expect(link(container.path("pending", first), container.path("pending", second)) == 0)
    // The links are passed over for a second after their last change (their grace), then the
    // first name goes to quarantine as a copy and the second is delivered.
    var delivered: [String] = []
    let settled = waitUntil(deadline: 60) {
      guard let drained = try? PythonSpool.run("drain", container) else { return false }
      delivered += drained.lines
      return container.names("pending").isEmpty
    }
    #expect(settled, "\(container.names("pending"))")
    #expect(delivered.count == 1, "\(delivered)")
    #expect(delivered.first?.contains(id.uuidString.lowercased()) == true)
    #expect(container.quarantineReasons() == ["unsafe"])
    var info = stat()
    let quarantined = try #require(container.names("quarantine").first)
    try #require(lstat(container.path("quarantine", quarantined), &info) == 0)
    #expect(info.st_nlink == 1)
  }
}

/// A delayed message that outlived its lifetime before its due time (same review): the Swift
/// library's maintenance deleted it, the Python reader kept it counted until it was due.
extension PythonLayoutTests {
  @Test func `The Python reader deletes a delayed message that expired before it was due`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(messageLifetime: 86_400))
    let id = UUID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let enqueued = now - 200_000_000_000  // 200,000 s ago: past the lifetime of a day
    let name = DelayedName(
      dueMicros: now + 3_600_000_000,
      message: PendingName(key: MessageKey(micros: enqueued, sequence: 1), id: id, attempts: 1)
    ).fileName
    try container.plant("delayed", name, envelope(id: id, micros: enqueued, text: "old", type: ""))
    let drained = try PythonSpool.run("drain", container)
    #expect(drained.lines.isEmpty)
    #expect(container.names("delayed").isEmpty)
    #expect(container.names("quarantine").isEmpty)
  }
}
