import Foundation
import Testing

@testable import AppGroupMailbox

/// What text output does with what came from outside, and spans the mailbox cannot hold (found
/// by an adversarial session): `quarantine list` cut a size of 7 digits to 6 and ran it into the
/// file name; `show` printed a type tag's line breaks and terminal escapes as they were; a
/// `--claim-timeout` of 1e-300 s was a lease that had run out when the claim was taken.
@Suite struct CLIOutputSafetyTests {
  @Test func `quarantine list keeps its columns, and show escapes control characters`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let planted = container.area("pending").appendingPathComponent("big\u{1B}[31mred\nFORGED")
    try Data(repeating: 0x41, count: 1_200_000).write(to: planted)
    #expect(try mailbox.claimPending().isEmpty)
    let list = try Mailboxctl.run(["quarantine"] + container.arguments() + ["list"])
    #expect(list.status == 0)
    #expect(list.lines.count == 2, "\(list.stdout)")
    let row = try #require(list.lines.last)
    let file = try #require(try mailbox.inspector.entries(in: [.quarantined]).first).fileName
    #expect(row.hasSuffix("  1200000 " + file), "\(row)")
    // Its id column says "unknown", which names nothing: the refusal says what does.
    let unknown = try Mailboxctl.run(["quarantine"] + container.arguments() + ["show", "unknown"])
    #expect(unknown.status == 66)
    #expect(
      unknown.stderr
        == "mailboxctl: error: quarantine: no such quarantined file: unknown (a file whose id is "
        + "unknown is named by its file name, the FILE column of 'mailboxctl quarantine list')\n")
    let byName = try Mailboxctl.run(["quarantine"] + container.arguments() + ["show", file])
    #expect(byName.status == 0, "\(byName.stderr)")

    let id = try mailbox.enqueue(Data("1".utf8), messageType: "EVIL\nFORGED: line\u{1B}[31m").id
    let show = try Mailboxctl.run(
      ["show"] + container.arguments() + [id.uuidString.lowercased()])
    #expect(show.status == 0)
    #expect(show.lines.contains("message type:    EVIL\\u{A}FORGED: line\\u{1B}[31m"))
    #expect(!show.stdout.contains("\u{1B}"))
  }

  @Test(arguments: [
    ["create", "--message-lifetime", "0.0000001"], ["drain", "--claim-timeout", "1e-300"],
  ])
  func `A span shorter than a microsecond is refused, nothing done`(arguments: [String]) throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      [arguments[0]] + container.arguments() + Array(arguments.dropFirst()))
    #expect(result.status == 64)
    #expect(
      result.stderr
        == "mailboxctl: error: \(arguments[0]): \(arguments[1]) needs at least 0.000001 seconds "
        + "(1 µs, the mailbox's resolution), not '\(arguments[2])'\n"
        + "Run 'mailboxctl \(arguments[0]) --help' for usage.\n")
    #expect(!FileManager.default.fileExists(atPath: container.area("pending").path))
  }
}
