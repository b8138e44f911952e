import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// The `retry` answer (docs/HANDLER-PROTOCOL.md). Found by adversarial sessions: a retry counted
/// as a delivery, so with `maxDeliveryAttempts` a short outage of the broker the NATS forwarder
/// retries for made dead letters of messages never forwarded (and the quarantine bound then
/// deleted them); and a message retried at once was claimed again at once, ahead of the rest:
/// a drain without `--follow` never ended, and the messages behind it never had their turn.
@Suite struct CoprocessRetryTests {
  /// A handler that answers `retry` after 0 s to message 0 and acknowledges every other one,
  /// logging each message number it gets to `log`.
  func handler(log: URL, in container: TemporaryContainer) throws -> [String] {
    let script = container.url.appendingPathComponent("handler.py")
    let body = """
      import json, sys
      sys.stdin.readline()
      sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
      sys.stdout.flush()
      log = open(\(JSONText.string(log.path)), "a")
      for line in sys.stdin:
          message = json.loads(line)
          log.write("%d\\n" % message["message"]["n"])
          log.flush()
          answer = {"id": message["id"], "action": "ack"}
          if message["message"]["n"] == 0:
              answer = {"id": message["id"], "action": "retry", "after": 0}
          sys.stdout.write(json.dumps(answer) + "\\n")
          sys.stdout.flush()

      """
    try Data(body.utf8).write(to: script)
    return ["--coprocess", "/usr/bin/python3", script.path]
  }

  /// The message numbers the handler logged.
  func handled(_ log: URL) -> [Int] {
    ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
      Int($0)
    }
  }

  @Test func `A retried message is passed over until the rest had their turn, and not counted`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(maxMessages: 100, maxDeliveryAttempts: 2))
    let ids = try container.enqueueNumbered(count: 4)
    let log = container.url.appendingPathComponent("log")
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + (try handler(log: log, in: container)), deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    // Without --follow the run ends with the retried message left for a later run, uncounted.
    #expect(handled(log) == [0, 1, 2, 3])
    let left = try container.remaining()
    #expect(left.map(\.id) == [ids[0]] && left.map(\.deliveryCount) == [0])
    #expect(container.names("quarantine") == [])
    // A later run delivers it again, and again does not count it.
    _ = try Mailboxctl.run(
      ["drain"] + container.arguments() + (try handler(log: log, in: container)), deadline: 60)
    #expect(handled(log) == [0, 1, 2, 3, 0])
    #expect(try container.remaining().map(\.deliveryCount) == [0])
  }

  @Test func `With --follow a message retried at once does not keep the rest waiting`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 4)
    let log = container.url.appendingPathComponent("log")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow"]
        + (try handler(log: log, in: container)))
    #expect(waitUntil(deadline: 60) { (try? container.remaining().map(\.id)) == [ids[0]] })
    // Each round hands message 0 out once, after every other pending message.
    #expect(waitUntil(deadline: 60) { handled(log).filter { $0 == 0 }.count >= 3 })
    #expect(Array(handled(log).prefix(4)) == [0, 1, 2, 3])
    drain.signal(SIGTERM)
    let result = try drain.finish(deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try container.remaining().map(\.id) == [ids[0]])
  }
}
