import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Found by an adversarial review: following the advice for a damaged settings file (move it
/// away, the mailbox then has the default settings) let the first consumer write settings with
/// the default `largestPayloadBytes`, and a stored message larger than that, admitted by the
/// earlier limit, went to quarantine as oversized. The writer now raises the limit to the
/// largest stored message file, in the Swift library and in interop/python alike.
@Suite struct SettingsRecoveryTests {
  /// A mailbox whose bound admitted a message of about 100 KB, its settings file then moved
  /// away; returns the message's id and its file's size in bytes.
  func largeMessageWithoutSettings(_ container: TemporaryContainer) throws -> (UUID, Int) {
    let limits = AppGroupMailboxLimits(maxPayloadBytes: 200_000)
    let payload = Data(("\"" + String(repeating: "x", count: 100_000) + "\"").utf8)
    let id = try container.rawMailbox(limits: limits).enqueue(payload).id
    let settings = container.url.path + "/AppGroupMailbox/jobs/settings"
    try FileManager.default.moveItem(atPath: settings, toPath: settings + ".damaged")
    let name = try #require(container.names("pending").first)
    let pending = container.area("pending").path
    let size = try FileManager.default.attributesOfItem(atPath: pending + "/" + name)[.size] as? Int
    // Beside it, files that must not raise the limit (found by a review of the fix): a sparse
    // gigabyte under a name that is no message's, and a sparse one under a message name.
    let sparse = pendingName(micros: 1_000_000, sequence: 1, id: UUID())
    for (file, length) in [("junk", 1 << 30), (sparse, 10_000_000)] {
      #expect(FileManager.default.createFile(atPath: pending + "/" + file, contents: nil))
      #expect(truncate(pending + "/" + file, off_t(length)) == 0)
    }
    return (id, try #require(size))
  }

  @Test func `The library's new settings keep a stored large message readable`() throws {
    let container = try TemporaryContainer()
    let (id, size) = try largeMessageWithoutSettings(container)
    let mailbox = try container.rawMailbox()
    #expect(mailbox.settings.maxPayloadBytes == 65_536)
    #expect(mailbox.settings.largestPayloadBytes == size)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.id) == [id])
    // Only the junk, as foreign (the sparse message is from 1970: expired, deleted).
    #expect(container.names("quarantine").map { $0.contains("-foreign-unknown-") } == [true])
  }

  @Test(.enabled(if: PythonSpool.available, "python3 is not installed"))
  func `Python's new settings keep a stored large message readable`() throws {
    let container = try TemporaryContainer()
    let (id, size) = try largeMessageWithoutSettings(container)
    let drained = try PythonSpool.run("drain", container)
    let ids = try jsonLines(drained.stdout).map { $0["id"] as? String }
    #expect(ids == [id.uuidString.lowercased()])
    // Only the junk, as foreign (the sparse message is from 1970: expired, deleted).
    #expect(container.names("quarantine").map { $0.contains("-foreign-unknown-") } == [true])
    #expect(try container.rawMailbox().settings.largestPayloadBytes == size)
  }
}
