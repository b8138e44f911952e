import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A quarantine entry whose name is not valid UTF-8 (planted by a member of the group) was
/// counted by `status` but missing from `quarantine list`, and `purge --all` exited 0 leaving it
/// (found by an adversarial review).
@Suite struct QuarantineNameTests {
  @Test func `A quarantined name that is not UTF-8 is listed and purged`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let bytes = Array("1796594000000000-unsafe-unknown-0000abcd".utf8) + [0xFF] + Array(".q".utf8)
    let path = container.area("quarantine").path + "/" + String(decoding: bytes, as: UTF8.self)
    let cPath = Array(container.area("quarantine").path.utf8) + [UInt8(ascii: "/")] + bytes + [0]
    let fd = cPath.withUnsafeBufferPointer {
      $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o600) }
    }
    #expect(fd >= 0)
    close(fd)
    #expect(try mailbox.inspector.status().quarantined == 1)
    let listed = try mailbox.inspector.entries(in: [.quarantined])
    #expect(listed.map(\.fileName) == [(path as NSString).lastPathComponent])
    #expect(listed.first?.fileName.unicodeScalars.contains("\u{FFFD}") == true)
    let listing = try Mailboxctl.run(["quarantine"] + container.arguments() + ["list"])
    #expect(listing.status == 0)
    #expect(listing.lines.count == 2)
    let purged = try Mailboxctl.run(["quarantine"] + container.arguments() + ["purge", "--all"])
    #expect(purged.status == 0)
    #expect(container.names("quarantine").isEmpty)
    #expect(try mailbox.inspector.purgeQuarantined(listed[0].fileName) == false)
  }

  /// Two names that are not UTF-8 list alike; `purge --all` removed both with the first and
  /// then said "notFound" with exit 66 (found by a review). A third file named with U+FFFD
  /// itself lists alike too, and two canonically equivalent names (NFC and NFD) are two files,
  /// which a dedupe by string equality purged one of (a third review).
  @Test func `Purging every file exits 0 when two names list alike`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    for name in ["a\u{FFFD}b", "caf\u{E9}", "cafe\u{301}"] {
      let path = container.area("quarantine").appendingPathComponent(name).path
      #expect(FileManager.default.createFile(atPath: path, contents: nil))
    }
    for byte: UInt8 in [0xFF, 0xFE] {
      let cPath =
        Array(container.area("quarantine").path.utf8) + Array("/a".utf8) + [
          byte, UInt8(ascii: "b"), 0,
        ]
      let fd = cPath.withUnsafeBufferPointer {
        $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o600) }
      }
      #expect(fd >= 0)
      close(fd)
    }
    #expect(container.names("quarantine").count == 5)
    let purged = try Mailboxctl.run(["quarantine"] + container.arguments() + ["purge", "--all"])
    #expect(purged.status == 0, "\(purged.stdout)")
    #expect(purged.lines == ["purged a\u{FFFD}b", "purged caf\u{E9}", "purged cafe\u{301}"])
    #expect(container.names("quarantine").isEmpty)
  }
}
