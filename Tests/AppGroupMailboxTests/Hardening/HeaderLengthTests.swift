import Foundation
import Testing

@testable import AppGroupMailbox

/// A header line that readers refuse is never written. Found by an adversarial session: an
/// enqueue with a type tag of a few thousand bytes was accepted (the file fit maxPayloadBytes),
/// and every consumer then quarantined it as malformed, since readers look for the header's line
/// feed only within the first 4,096 bytes (docs/FORMAT.md, "Message files"); the NATS bridge
/// acknowledged such a message to JetStream, so it was lost.
@Suite struct HeaderLengthTests {
  @Test func `Around the limit a type tag is either stored and claimed, or refused unwritten`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 1_000))
    var stored = 0
    var refused = 0
    for length in 3_980...4_040 {
      let tag = String(repeating: "T", count: length)
      do {
        try mailbox.enqueue(Data("1".utf8), messageType: tag)
        stored += 1
      } catch AppGroupMailboxError.encodingFailure {
        refused += 1
        continue
      }
      let claims = try mailbox.claimPending()
      #expect(claims.map(\.messageType) == [tag], "\(length)")
      for claim in claims { try claim.acknowledge() }
    }
    #expect(stored > 0 && refused > 0)
    #expect(try mailbox.inspector.entries(in: [.quarantined]).isEmpty)
    #expect(try mailbox.inspector.status().depth == 0)
  }

  @Test func `A type tag whose escapes make the header too long is refused by every producer`()
    throws
  {
    let container = try TemporaryContainer()
    // 700 control characters: 700 bytes, 4,200 once escaped as \u0001.
    let escaped = String(repeating: "\u{1}", count: 700)
    let raw = try container.rawMailbox()
    #expect(throws: AppGroupMailboxError.encodingFailure) {
      try raw.enqueue(Data("1".utf8), messageType: escaped)
    }
    #expect(throws: AppGroupMailboxError.encodingFailure) {
      try raw.validate(Data("1".utf8), messageType: escaped)
    }
    let typed = try container.mailbox(
      Int.self, messageType: String(repeating: "é", count: 2_500))
    #expect(throws: AppGroupMailboxError.encodingFailure) { try typed.enqueue(1) }

    let cli = try Mailboxctl.run(
      ["enqueue"] + container.arguments()
        + ["--type", String(repeating: "T", count: 5_000), "--data", "1"])
    #expect(cli.status == 65)
    #expect(
      cli.stderr
        == "mailboxctl: error: enqueue: --type is too long: the message's header line would be "
        + "over the 4096 bytes every reader accepts; nothing was enqueued\n")
    #expect(try raw.inspector.status().depth == 0)
    #expect(container.names("tmp").isEmpty)
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `The Python producer refuses a header too long and writes nothing`() throws {
    let container = try TemporaryContainer()
    let python = try PythonSpool.start(
      "enqueue", container, ["--lines", "--type", String(repeating: "T", count: 5_000)],
      stdin: Data("1\n".utf8)
    ).finish()
    #expect(python.status == 65)
    #expect(python.stdout == "header-too-long\n")
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
  }
}
