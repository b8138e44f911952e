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
        == "mailboxctl: error: quarantine: purge: unlinkat on the quarantine area failed: "
        + "Operation not permitted (errno 1)\n")
    #expect(container.names("quarantine") == ["1-stuck"])
  }
}
