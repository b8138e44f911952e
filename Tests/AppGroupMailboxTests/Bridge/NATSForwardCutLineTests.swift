import Foundation
import Testing

@testable import AppGroupMailbox

/// A last input line without its line feed was cut when drain closed a handler's input in the
/// middle of it (docs/HANDLER-PROTOCOL.md): not a message. Found by an adversarial review:
/// forward.py took a cut line that happened to end with `}` for a message, published its first
/// 64 KiB to JetStream and answered "ack".
@Suite struct NATSForwardCutLineTests {
  static let subject = "jobs.cut"

  /// A drain line for the message `{"n":N}` with id `id`.
  static func line(_ id: String, _ number: Int) -> String {
    #"{"id":"\#(id)","enqueuedAt":"2026-12-07T08:00:00.000000Z","deliveryCount":1,"#
      + #""messageType":"","payloadVersion":1,"priority":5,"message":{"n":\#(number)}}"#
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `forward.py publishes whole lines only, never a cut last line`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: Self.subject)
    defer { server.stop() }
    let whole = UUID().uuidString.lowercased()
    let cut = UUID().uuidString.lowercased()
    // The cut falls after a `}` of the message: the line still ends with one.
    let input =
      String(decoding: NATSForwardHandshakeTests.greeting, as: UTF8.self)
      + Self.line(whole, 1) + "\n" + Self.line(cut, 2).dropLast()
    let result = try Processes.start(
      NATSBridge.python,
      [NATSBridge.script("forward.py"), "--server", server.url, "--subject", Self.subject],
      stdin: Data(input.utf8)
    ).finish(deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    let answers = try jsonLines(result.stdout).compactMap { $0["id"] as? String }
    #expect(answers == [whole])
    let stored = try jsonLines(try NATSBridge.tool(server, ["dump", "--name", "MAILBOX"]))
    #expect(stored.count == 1)
  }
}
