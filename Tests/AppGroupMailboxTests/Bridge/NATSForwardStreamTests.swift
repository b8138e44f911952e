import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// forward.py and a `--stream` that can never store a message (found by an adversarial review):
/// every publish was answered "retry", for ever, and nothing said the set-up was wrong.
@Suite struct NATSForwardStreamTests {
  /// Its subjects are not matched against `--subject` (a second review: a mapping in the
  /// server's configuration may route a subject the stream does not list to it).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A stream that does not exist ends forward.py with exit 78, naming it`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.>")
    defer { server.stop() }
    let outgoing = try container.rawMailbox(namespace: "out")
    for number in 1...2 { try outgoing.enqueue(Data("\(number)".utf8)) }
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: "out") + [
        "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"), "--server",
        server.url, "--subject", "mailbox.jobs", "--stream", "NOPE",
      ])
    // Each start ends with 78; drain gives up after five.
    #expect(forwarded.status == 69, "\(forwarded.stderr)")
    #expect(
      forwarded.stderr.contains("forward.py: cannot forward to stream NOPE: stream not found\n"),
      "\(forwarded.stderr)")
    #expect(forwarded.stderr.contains("the handler ended 5 times in a row without an answer"))
    #expect(try outgoing.inspector.entries(in: [.pending]).count == 2)
    #expect(try NATSBridge.info(server, ["--name", "MAILBOX"])["messages"] as? Int == 0)
  }
}
