import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// End-to-end tests of `drain --coprocess`: the handler protocol, answers in any order,
/// handlers that crash, print garbage, hang, speak another version or keep dying.
@Suite struct CLICoprocessTests {
  /// Runs drain (with a short retry delay) until nothing is left, waiting for released
  /// messages to fall due between runs (at most 30 runs); returns every run's stderr.
  func drainUntilEmpty(_ container: TemporaryContainer, _ handler: [String]) throws -> String {
    var stderr = ""
    for _ in 0..<30 {
      let result = try Mailboxctl.run(
        ["drain"] + container.arguments() + ["--retry-delay", "0.05"] + handler)
      stderr += result.stderr
      if try container.remaining().isEmpty { break }
      if let due = try container.rawMailbox().nextDueDate() {
        #expect(waitUntil(deadline: 30) { Date() > due })
      }
    }
    return stderr
  }

  @Test func `A Python function handler gets every field and acknowledges in FIFO order`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let first = try mailbox.enqueue(
      Data("{\"text\":\"héllo\"}".utf8), messageType: "greeting", payloadVersion: 3
    ).id
    let second = try mailbox.enqueue(Data("[1, 2]".utf8)).id
    let log = container.url.appendingPathComponent("log")
    let handler = try PythonHandler.write(
      """
      out = open(\(JSONText.string(log.path)), "a")
      def handle(m):
          out.write(json.dumps([m.id, m.delivery_count, m.message_type, m.payload_version,
                                m.message, len(m.enqueued_at)]) + "\\n")
          out.flush()
      mailbox_handler.run(handle)

      """, in: container)
    let result = try Mailboxctl.run(["drain"] + container.arguments() + handler)
    #expect(result.status == 0)
    #expect(result.stdout == "")
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 2, released 0, quarantined 0")
    let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
    #expect(
      lines == [
        "[\"\(first.uuidString.lowercased())\", 1, \"greeting\", 3, {\"text\": \"h\\u00e9llo\"}, 27]",
        "[\"\(second.uuidString.lowercased())\", 1, \"\", 1, [1, 2], 27]",
      ])
    #expect(try container.remaining().isEmpty)
  }

  @Test func `Answers in any order: ack, release, retry after N seconds, and dead letter`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 4).map { $0.uuidString.lowercased() }
    // Holds all four, then answers from the last to the first.
    let handler = try PythonHandler.write(
      """
      session = mailbox_handler.Session()
      held = []
      for message in session:
          held.append(message)
          if len(held) == 4:
              a, b, c, d = held
              session.dead_letter(d.id, "poison")
              session.retry(c.id, 3600)
              session.release(b.id)
              session.ack(a.id)

      """, in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "4", "--retry-jitter", "0"] + handler)
    #expect(result.status == 75)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 1, released 2, quarantined 1")
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: message \(ids[3]): dead-lettered by the handler: poison\n"))
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: message \(ids[1]): handler released it; released, retry in 1 s\n"))
    let left = try container.remaining()
    #expect(left.map { $0.id?.uuidString.lowercased() } == [ids[1], ids[2]])
    #expect(left.map(\.state) == [.delayed, .delayed])
    let quarantined = try container.rawMailbox().inspector.entries(in: [.quarantined])
    #expect(quarantined.map { $0.id?.uuidString.lowercased() } == [ids[3]])
  }

  /// Found by an adversarial session: the thread pool swallowed the SystemExit, the message
  /// stayed unanswered, and drain and the handler waited for each other for ever.
  @Test func `A Python function that calls sys.exit on a worker thread ends the handler`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 1)
    let handler = try PythonHandler.write(
      """
      def handle(m):
          sys.exit(3)
      mailbox_handler.run(handle, threads=4)

      """, in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "4", "--retry-delay", "3600"] + handler,
      deadline: 60)
    #expect(result.status == 75, "\(result.stderr)")
    #expect(result.stderr.contains("exit status 3"), "\(result.stderr)")
    #expect(try container.remaining().map(\.id) == ids)
  }

  @Test func `A Python function raising Retry, DeadLetter or another error is answered so`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 4).map { $0.uuidString.lowercased() }
    let handler = try PythonHandler.write(
      """
      def handle(m):
          n = m.message["n"]
          if n == 0:
              raise mailbox_handler.Retry(3600)
          if n == 1:
              raise mailbox_handler.DeadLetter("cannot parse")
          if n == 2:
              raise ValueError("boom")
      mailbox_handler.run(handle, threads=2)

      """, in: container)
    let started = Date()
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "2", "--retry-jitter", "0"] + handler)
    let ended = Date()
    #expect(result.status == 75)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 1, released 2, quarantined 1")
    // The exception's type, never its text (it often holds message data).
    #expect(result.stderr.contains("mailbox_handler: message \(ids[2]): ValueError\n"))
    #expect(!result.stderr.contains("boom"))
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: message \(ids[1]): dead-lettered by the handler: cannot parse\n"))
    // Retry(3600) waits an hour; the error, the retry policy's 1 s: each from when drain
    // applied the answer, some time between its start and its end.
    var due: [String: Date] = [:]
    for entry in try container.remaining() where entry.state == .delayed {
      due[entry.id?.uuidString.lowercased() ?? ""] = entry.dueAt
    }
    #expect(Set(due.keys) == [ids[0], ids[2]])
    let window = { (delay: TimeInterval) in
      started.addingTimeInterval(delay - 0.01)...ended.addingTimeInterval(delay + 0.01)
    }
    #expect(window(3600).contains(due[ids[0]] ?? .distantPast))
    #expect(window(1).contains(due[ids[2]] ?? .distantPast))
  }

  /// Found by an adversarial session: `Retry(float("inf"))` or `Retry(1e12)` sent an `after`
  /// drain refuses (more than 1e9, or `Infinity`, which is no JSON; `Retry(10**400)`, found by a
  /// review, raised OverflowError and failed the message), and a `DeadLetter` reason
  /// holding a byte that is not UTF-8 (a file name from os.fsdecode) a lone surrogate escape
  /// drain cannot read: drain stopped the handler and failed every message it held, so a
  /// retried message and its neighbours became dead letters under maxDeliveryAttempts.
  @Test
  func
    `The Python helper sends a retry past 1e9 s and a reason that is not UTF-8 so drain accepts them`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 3).map { $0.uuidString.lowercased() }
    let handler = try PythonHandler.write(
      """
      def handle(m):
          n = m.message["n"]
          if n == 0:
              raise mailbox_handler.Retry(float("inf"))
          if n == 1:
              raise mailbox_handler.Retry(10**400)  # past a float, as 1e12 is past 1e9
          raise mailbox_handler.DeadLetter("cannot read " + os.fsdecode(b"report-\\xff.csv"))
      mailbox_handler.run(handle, threads=3)

      """, in: container)
    let started = Date()
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--jobs", "3"] + handler)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 0, released 2, quarantined 1")
    #expect(!result.stderr.contains("--coprocess handler"), "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: message \(ids[2]): dead-lettered by the handler: "
          + "cannot read report-\\udcff.csv\n"))
    let left = try container.remaining()
    #expect(Set(left.map { $0.id?.uuidString.lowercased() }) == [ids[0], ids[1]])
    for entry in left {
      #expect(entry.state == .delayed)
      #expect(entry.deliveryCount == 0)
      #expect((entry.dueAt ?? .distantPast) >= started.addingTimeInterval(1e9 - 1))
    }
  }

  @Test func `A handler that speaks another protocol version is refused with exit 76`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--coprocess", "sh", "-c",
        "read greeting; echo '{\"protocol\":\"mailboxctl-handler\",\"version\":2}'; cat",
      ])
    #expect(result.status == 76)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: --coprocess: the handler was refused: it speaks protocol "
          + "version 2; this mailboxctl speaks 1\n"))
    #expect(try container.remaining().map(\.deliveryCount) == [0, 0])
  }

  @Test func `A handler that keeps dying stops drain with exit 69 and touches nothing`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let starts = container.url.appendingPathComponent("starts")
    // It answers the greeting, so it speaks the protocol, then exits before reading a message.
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--coprocess", "sh", "-c",
        "echo started >> '\(starts.path)'; read greeting; "
          + "echo '{\"protocol\":\"mailboxctl-handler\",\"version\":1}'; exit 1",
      ])
    #expect(result.status == 69)
    // drain may see its exit, or a message line it writes refused (EPIPE), first.
    #expect(
      ["exit status 1", "closed its input (Broken pipe)"].contains {
        result.stderr.hasSuffix(
          "mailboxctl: error: drain: --coprocess: the handler ended 5 times in a row without an "
            + "answer (last: \($0)); giving up\n")
      }, "\(result.stderr)")
    #expect(
      try String(contentsOf: starts, encoding: .utf8) == String(repeating: "started\n", count: 5))
    #expect(try container.remaining().map(\.deliveryCount) == [0, 0])
    #expect(try container.remaining().map(\.state) == [.pending, .pending])
  }

  /// Found by a new user's run: `--coprocess python3 script.py` with a script that is not there
  /// was started five times (Python's error each time) before drain gave up.
  @Test func `A first handler that ends before the greeting stops drain at once with exit 69`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let starts = container.url.appendingPathComponent("starts")
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--coprocess", "sh", "-c", "echo started >> '\(starts.path)'; exit 2",
      ])
    #expect(result.status == 69)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: --coprocess: the handler did not answer the greeting (exit "
          + "status 2); giving up\n"))
    #expect(try String(contentsOf: starts, encoding: .utf8) == "started\n")
    #expect(try container.remaining().map(\.deliveryCount) == [0, 0])
    #expect(try container.remaining().map(\.state) == [.pending, .pending])
  }

  @Test func `A handler crashing on every third message is survived: nothing lost`() throws {
    let container = try TemporaryContainer()
    let ids = Set(try container.enqueueNumbered(count: 30).map { $0.uuidString.lowercased() })
    let log = container.url.appendingPathComponent("log")
    let handler = try PythonHandler.write(
      PythonHandler.logging(to: log, crashEvery: 3), in: container)
    let stderr = try drainUntilEmpty(container, handler)
    #expect(!stderr.contains("giving up"))
    #expect(try container.remaining().isEmpty)
    let records = try PythonHandler.records(log)
    #expect(Set(records.map(\.id)) == ids)
    #expect(records.count == 30)  // a crashed handling never logged, so no duplicates here
    #expect(Set(records.map(\.pid)).count >= 10)  // a new handler after each crash
  }

  @Test func `A handler printing garbage is survived: it is restarted and nothing is lost`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = Set(try container.enqueueNumbered(count: 20).map { $0.uuidString.lowercased() })
    let log = container.url.appendingPathComponent("log")
    let handler = try PythonHandler.write(
      """
      session = mailbox_handler.Session()
      log = open(\(JSONText.string(log.path)), "a")
      for n, message in enumerate(session, 1):
          if n % 4 == 0:
              session._out.write(b"this is not an answer\\n")
              session._out.flush()
              continue
          log.write(f"{os.getpid()} {message.id}\\n")
          log.flush()
          session.ack(message.id)

      """, in: container)
    let stderr = try drainUntilEmpty(container, handler)
    #expect(
      stderr.contains(
        "wrote a line that is not a JSON object; 1 unanswered message released\n"))
    #expect(try container.remaining().isEmpty)
    let records = try PythonHandler.records(log)
    #expect(Set(records.map(\.id)) == ids)
    #expect(records.count == 20)
  }

  @Test func `A message left unanswered past --handler-timeout is released, the others delivered`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 3).map { $0.uuidString.lowercased() }
    let handler = try PythonHandler.write(
      """
      import time
      def handle(m):
          if m.message["n"] == 0 and m.delivery_count == 1:
              time.sleep(600)
      mailbox_handler.run(handle)

      """, in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--handler-timeout", "1", "--retry-jitter", "0"]
        + handler)
    #expect(result.status == 75)
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: message \(ids[0]): handler left message \(ids[0]) unanswered for "
          + "1 s; released, retry in 1 s\n"))
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 2, released 1, quarantined 0")
    let left = try container.remaining()
    #expect(left.map { $0.id?.uuidString.lowercased() } == [ids[0]])
    #expect(left.map(\.state) == [.delayed])
  }

  @Test func `SIGTERM lets the handler answer what it holds; --limit stops claiming`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 5)
    let started = container.url.appendingPathComponent("started")
    let handler = try PythonHandler.write(
      """
      import time
      def handle(m):
          open(\(JSONText.string(started.path)), "w").close()
          time.sleep(1)
      mailbox_handler.run(handle)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow"] + handler)
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: started.path) })
    drain.signal(SIGTERM)
    let result = try drain.finish()
    #expect(result.status == 0)
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 1, released 0, quarantined 0")
    #expect(try container.remaining().count == 4)
    let limited = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--limit", "2"] + handler)
    #expect(limited.status == 0)
    #expect(
      drainSummary(limited.stderr) == "mailboxctl: drain: delivered 2, released 0, quarantined 0")
    #expect(try container.remaining().count == 2)
  }
}
