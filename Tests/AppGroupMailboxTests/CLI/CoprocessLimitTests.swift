import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// `--limit` and messages no handler had (found by a review of docs/HANDLER-PROTOCOL.md): a
/// handler that died with messages unread in its pipe got them put back uncounted, yet they
/// counted toward the limit, so `drain --limit 2` ended having delivered one, exit 0.
@Suite struct CoprocessLimitTests {
  @Test func `Messages put back unread do not count toward --limit`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 3)
    let flag = container.url.appendingPathComponent("first-exited")
    // The first instance greets, then exits without reading a message; the next ones ack.
    let handler = try PythonHandler.greeted(
      """
      if not os.path.exists(\(JSONText.string(flag.path))):
          open(\(JSONText.string(flag.path)), "w").close()
          sys.exit(1)
      for line in sys.stdin:
          message = json.loads(line)
          sys.stdout.write(json.dumps({"id": message["id"], "action": "ack"}) + "\\n")
          sys.stdout.flush()

      """, importing: "json, os, sys", in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--limit", "2", "--json"] + handler)
    #expect(result.status == 0, "\(result.stderr)")
    let last = try #require(result.stderr.split(separator: "\n").last.map(String.init))
    let summary = try #require(try jsonLines(last).first)
    #expect(summary["delivered"] as? Int == 2, "\(result.stderr)")
    let left = try container.remaining()
    #expect(left.map(\.id) == [ids[2]])
    #expect(left.map(\.deliveryCount) == [0])
  }

  /// The first fix counted what was put back, but the limit ended the run while the handler
  /// still held messages: those it then left unread went back and were not claimed again
  /// (found by a review of the fix).
  @Test func `A limit reached with messages in flight waits to see them handled`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 4)
    // Each instance takes its time, reads one line a byte at a time (the rest stays unread in
    // the pipe), answers it, and exits.
    let handler = try PythonHandler.greeted(
      """
      import time
      time.sleep(0.5)
      line = b""
      while not line.endswith(b"\\n"):
          line += os.read(0, 1)
      message = json.loads(line)
      sys.stdout.write(json.dumps({"id": message["id"], "action": "ack"}) + "\\n")
      sys.stdout.flush()

      """, importing: "json, os, sys", in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--limit", "2", "--jobs", "4", "--json"] + handler)
    #expect(result.status == 0, "\(result.stderr)")
    let last = try #require(result.stderr.split(separator: "\n").last.map(String.init))
    let summary = try #require(try jsonLines(last).first)
    #expect(summary["delivered"] as? Int == 2, "\(result.stderr)")
    let left = try container.remaining()
    #expect(left.count == 2)
    #expect(left.map(\.deliveryCount) == [0, 0])
  }
}
