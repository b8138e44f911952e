import Foundation
import Testing

@testable import AppGroupMailbox

/// `mailboxctl cancel ID` with the built binary: each outcome's output and exit status.
@Suite struct CLICancelTests {
  func cancel(_ container: TemporaryContainer, _ id: String, json: Bool = false) throws
    -> Finished
  {
    try Mailboxctl.run(["cancel"] + container.arguments() + [id] + (json ? ["--json"] : []))
  }

  @Test func `Cancel prints the id and exits 0; a second cancel exits 66`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let id = try mailbox.enqueue(Data("1".utf8)).id.uuidString.lowercased()
    try mailbox.enqueue(Data("2".utf8))
    let first = try cancel(container, id.uppercased())
    #expect(first.status == 0)
    #expect(first.stdout == "cancelled \(id)\n")
    #expect(try mailbox.inspector.status().pending == 1)
    let second = try cancel(container, id, json: true)
    #expect(second.status == 66)
    #expect(
      second.stdout == "{\"id\":\"\(id)\",\"outcome\":\"notFound\",\"quarantineFile\":null}\n")
    #expect(second.stderr == "mailboxctl: error: cancel: no such message: \(id)\n")
  }

  @Test func `A claimed message exits 75 and a quarantined one 65 naming its file`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let held = try mailbox.enqueue(Data("1".utf8)).id.uuidString.lowercased()
    let dead = try mailbox.enqueue(Data("2".utf8)).id.uuidString.lowercased()
    let claims = try mailbox.claimPending()
    try #require(claims.count == 2)
    try claims[1].deadLetter()
    let claimed = try cancel(container, held)
    #expect(claimed.status == 75)
    #expect(claimed.stdout == "")
    #expect(
      claimed.stderr
        == "mailboxctl: error: cancel: \(held) is claimed; its holder decides (nothing was changed)\n"
    )
    let file = try #require(container.names("quarantine").first)
    let quarantined = try cancel(container, dead, json: true)
    #expect(quarantined.status == 65)
    #expect(
      quarantined.stdout
        == "{\"id\":\"\(dead)\",\"outcome\":\"quarantined\",\"quarantineFile\":\"\(file)\"}\n")
    // The suggested command line names this mailbox (new-user trial: it left the options out).
    let location = container.arguments().joined(separator: " ")
    #expect(quarantined.stderr.contains("'mailboxctl quarantine purge \(location) \(file)'"))
    try claims[0].acknowledge()
  }

  @Test func `An ID that is not a UUID exits 64 and a missing mailbox 66`() throws {
    let container = try TemporaryContainer()
    let usage = try cancel(container, "abc")
    #expect(usage.status == 64)
    #expect(
      usage.stderr.hasPrefix("mailboxctl: error: cancel: ID is not a message id (a UUID): 'abc'\n"))
    let missing = try cancel(container, UUID().uuidString)
    #expect(missing.status == 66)
  }
}
