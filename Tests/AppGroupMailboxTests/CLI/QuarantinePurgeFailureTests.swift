import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `quarantine purge` goes on past a file it cannot delete: before, the first such file
/// stopped the command and the files after it were not tried (stop 33's named leftovers).
@Suite struct QuarantinePurgeFailureTests {
  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
  func `A file purge cannot delete is reported and the others are still purged`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let quarantine = container.area("quarantine").path
    for name in ["1-stuck", "2-free", "3-free"] {
      #expect(
        FileManager.default.createFile(atPath: quarantine + "/" + name, contents: Data("x".utf8)))
    }
    let stuck = quarantine + "/1-stuck"
    try InodeFlag.immutable.set(stuck)
    defer { InodeFlag.clearAll(stuck, container) }
    let result = try Mailboxctl.run(
      ["quarantine", "purge", "--all"] + container.arguments())
    #expect(result.status == 74)
    #expect(result.stdout == "failed 1-stuck\npurged 2-free\npurged 3-free\n")
    #expect(
      result.stderr
        == "mailboxctl: error: quarantine: 1-stuck: purge: unlinkat on the quarantine area failed: "
        + "Operation not permitted (errno 1)\n")
    #expect(container.names("quarantine") == ["1-stuck"])
  }

  /// Names that are not UTF-8 and list alike (U+FFFD) are purged together: one that cannot be
  /// deleted stopped the others of that spelling, and the deleted ones were not flushed
  /// (review of the change above).
  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
  func `A file purge cannot delete does not keep the others of its spelling`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let quarantine = container.area("quarantine").path
    for last: UInt8 in [0xF0, 0xF1, 0xF2] {
      let path = Array(quarantine.utf8) + [UInt8(ascii: "/"), UInt8(ascii: "B"), last, 0]
      let fd = path.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer { name in
        name.baseAddress.map { open($0, O_CREAT | O_WRONLY, 0o600) } ?? -1
      }
      #expect(fd >= 0)
      close(fd)
    }
    // chattr(1) takes the path as bytes: the second file, by its exact name.
    let flagged = try Processes.run(
      "/bin/sh", ["-c", "chattr +i \"$(printf '%s/B\\361' \"$0\")\"", quarantine])
    try #require(flagged.status == 0, "chattr +i failed: \(flagged.stderr)")
    defer {
      withExtendedLifetime(container) {
        _ = try? Processes.run(
          "/bin/sh", ["-c", "chattr -i \"$(printf '%s/B\\361' \"$0\")\"", quarantine])
      }
    }
    let result = try Mailboxctl.run(
      ["quarantine", "purge", "B\u{FFFD}"] + container.arguments())
    #expect(result.status == 74)
    #expect(result.stdout == "failed B\u{FFFD}\n")
    let left = try FileManager.default.contentsOfDirectory(atPath: quarantine)
    #expect(left.count == 1)
  }
}
