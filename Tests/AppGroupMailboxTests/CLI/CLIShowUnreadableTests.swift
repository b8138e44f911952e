import Foundation
import Testing

/// `mailboxctl show` says why a file is not a readable envelope, in text and in JSON.
@Suite struct CLIShowUnreadableTests {
  @Test func `Show names why a file is unreadable`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let name = pendingName(micros: 1_700_000_000_000_000, sequence: 1)
    try container.plant("pending", name, Array("not an envelope".utf8))
    let text = try Mailboxctl.run(["show"] + container.arguments() + [name])
    #expect(text.status == 0)
    #expect(text.stdout.hasSuffix("envelope:        unreadable (malformed)\n"))
    let json = try Mailboxctl.run(["show"] + container.arguments() + [name, "--json"])
    let object = try #require(try jsonLines(json.stdout).first)
    #expect(object["unreadable"] as? String == "malformed")
    #expect(object["format"] is NSNull)
  }
}
