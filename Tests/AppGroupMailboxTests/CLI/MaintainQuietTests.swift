import Foundation
import Testing

@testable import AppGroupMailbox

/// `maintain --quiet`, for a timer that runs it every 30 s: six lines a run filled the journal
/// with about 17,000 lines a day of zeros (found by a new-user run).
@Suite struct MaintainQuietTests {
  @Test func `maintain --quiet prints only the counts that are not 0`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let idle = try Mailboxctl.run(["maintain"] + container.arguments() + ["--quiet"])
    #expect(idle.status == 0, "\(idle.stderr)")
    #expect(idle.stdout == "")
    let leftover = container.area("tmp").appendingPathComponent("1-ab.tmp")
    #expect(FileManager.default.createFile(atPath: leftover.path, contents: Data("x".utf8)))
    try FileManager.default.setAttributes(
      [.modificationDate: Date().addingTimeInterval(-3_600)], ofItemAtPath: leftover.path)
    let swept = try Mailboxctl.run(["maintain"] + container.arguments() + ["--quiet"])
    #expect(swept.status == 0, "\(swept.stderr)")
    #expect(swept.stdout == "temporary files removed:  1\n")
    let both = try Mailboxctl.run(["maintain"] + container.arguments() + ["--quiet", "--json"])
    #expect(both.status == 64)
  }
}
