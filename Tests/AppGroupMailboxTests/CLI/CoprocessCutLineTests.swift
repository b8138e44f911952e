import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// A message is its whole line. Found by an adversarial review: on a stop signal drain closed a
/// `--coprocess` handler's stdin at once, dropping the rest of a line it was in the middle of
/// writing, and still applied the handler's answer for that message: a handler that took the
/// cut line for a message (the NATS bridge's forwarder did, when the cut fell after a `}`)
/// published half of it and answered "ack", and drain deleted the message.
@Suite struct CoprocessCutLineTests {
  /// The size of a pipe's buffer (pipe(7): 16 pages).
  static let pipeSize = 65_536

  /// A handler that answers the greeting, defines `wait_for_full_pipe()`, then runs `body`.
  func handler(_ body: String, in container: TemporaryContainer) throws -> [String] {
    let waiting = """
      def wait_for_full_pipe():
          waiting = array.array("i", [0])
          while waiting[0] < \(Self.pipeSize):
              fcntl.ioctl(0, termios.FIONREAD, waiting)
              time.sleep(0.01)

      """
    return try PythonHandler.greeted(
      waiting + body, importing: "array, fcntl, json, os, select, signal, sys, termios, time",
      in: container)
  }

  /// A mailbox holding one message whose drain line is `lineBytes` long, line feed included.
  func mailbox(_ container: TemporaryContainer, lineBytes: Int) throws -> AppGroupRawMailbox {
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 10, maxPayloadBytes: 1_000_000))
    // drain's line is the payload in a frame of fixed width (id, dates, counts): measure it.
    try mailbox.enqueue(Data("1".utf8))
    let probe = try #require(try mailbox.claimPending(limit: 1).first)
    let frame = DrainContext.line(probe).utf8.count - probe.payload.count
    try probe.acknowledge()
    let pad = String(repeating: "x", count: lineBytes - 1 - frame - #"{"p":""}"#.utf8.count)
    try mailbox.enqueue(Data(#"{"p":"\#(pad)"}"#.utf8))
    return mailbox
  }

  /// The pipe full one byte short of a line (its line feed) when the stop signal comes: drain
  /// writes that byte once the handler reads, then closes the input; the handler's answer for
  /// the whole line counts. Before, the line feed was dropped and the line ended at end of input.
  @Test func `After a stop signal drain finishes the line it was writing`() throws {
    let container = try TemporaryContainer()
    let mailbox = try mailbox(container, lineBytes: Self.pipeSize + 1)
    let full = container.url.appendingPathComponent("full")
    let go = container.url.appendingPathComponent("go")
    let body = """
      wait_for_full_pipe()
      open(\(JSONText.string(full.path)), "w").close()
      while not os.path.exists(\(JSONText.string(go.path))):
          time.sleep(0.01)
      line = sys.stdin.readline()
      if line.endswith("\\n"):  # a cut line is not a message (docs/HANDLER-PROTOCOL.md)
          sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "action": "ack"}) + "\\n")
          sys.stdout.flush()
      sys.stdin.read()

      """
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + (try handler(body, in: container)))
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: full.path) })
    drain.signal(SIGTERM)
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    let finished = try drain.finish(deadline: 60)
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.contains("drain: delivered 1, released 0"), "\(finished.stderr)")
    #expect(try mailbox.inspector.entries(in: [.pending, .claimed, .delayed]).isEmpty)
  }

  /// A handler that reads nothing until drain gives up on it (`--shutdown-timeout`) gets the
  /// line drain was writing cut, and answers "ack" for it anyway: drain ignores that answer and
  /// puts the message back with its delivery count unchanged.
  @Test func `An answer for a line drain cut is ignored and the message goes back uncounted`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try mailbox(container, lineBytes: 3 * Self.pipeSize)
    let full = container.url.appendingPathComponent("full")
    let body = """
      signal.signal(signal.SIGTERM, signal.SIG_IGN)  # SIGKILL comes 5 s after drain gives up
      wait_for_full_pipe()
      open(\(JSONText.string(full.path)), "w").close()
      poller = select.poll()
      poller.register(0, select.POLLIN | select.POLLHUP)
      while not any(events & select.POLLHUP for _, events in poller.poll(10000)):
          pass
      line = sys.stdin.read()
      ends = line.endswith("\\n")
      sys.stderr.write(f"handler: read {len(line)} characters, line feed: {ends}\\n")
      ident = line.split('"id":"')[1][:36]
      sys.stdout.write(json.dumps({"id": ident, "action": "ack"}) + "\\n")
      sys.stdout.flush()

      """
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--shutdown-timeout", "1"]
        + (try handler(body, in: container)))
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: full.path) })
    drain.signal(SIGTERM)
    let finished = try drain.finish(deadline: 60)
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(finished.stderr.contains("line feed: False"), "\(finished.stderr)")
    #expect(finished.stderr.contains("before it had its whole line; ignored"), "\(finished.stderr)")
    #expect(finished.stderr.contains("drain: delivered 0, released 1"), "\(finished.stderr)")
    let left = try mailbox.inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.state) == [.pending])
    #expect(left.map(\.deliveryCount) == [0])
  }

  /// Two files with one id (a copy is a second message, docs/FORMAT.md) claimed in one batch:
  /// the second was taken for the first re-claimed after a stall, and its claim was dropped
  /// without a release, left in `claimed/` until its lease ran out. It is held now and sent
  /// once the first is answered (a first fix put it back, which `--follow` claimed again at
  /// once, spinning without applying answers: a second adversarial review).
  @Test(arguments: [false, true])
  func `A second file with an id in flight is sent once the first is answered`(follow: Bool)
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    try container.addPendingCopy()
    let answersAll = """
      for line in sys.stdin:
          sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "action": "ack"}) + "\\n")
          sys.stdout.flush()

      """
    let arguments =
      ["drain"] + container.arguments() + ["--jobs", "2"] + (follow ? ["--follow"] : [])
      + (try handler(answersAll, in: container))
    let result: Finished
    if follow {
      let drain = try Mailboxctl.start(arguments)
      #expect(
        waitUntil(deadline: 60) {
          (try? mailbox.inspector.entries(in: [.pending, .claimed, .delayed]).isEmpty) == true
        })
      drain.signal(SIGTERM)
      result = try drain.finish(deadline: 60)
    } else {
      result = try Mailboxctl.run(arguments, deadline: 60)
    }
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("drain: delivered 2, released 0"), "\(result.stderr)")
    #expect(try mailbox.inspector.entries(in: [.pending, .claimed, .delayed]).isEmpty)
  }

  /// An answer written without a line feed just before the handler exits was dropped with the
  /// rest of its output (the message released as unanswered); it counts as the answer it is.
  @Test func `A last answer without a line feed counts`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let body = """
      line = sys.stdin.readline()
      sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "action": "ack"}))
      sys.stdout.flush()

      """
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + (try handler(body, in: container)), deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("drain: delivered 1, released 0"), "\(result.stderr)")
    #expect(try mailbox.inspector.entries(in: [.pending, .claimed, .delayed]).isEmpty)
  }
}

/// python/mailbox_handler.py ended with a JSONDecodeError traceback on a cut last line instead
/// of ending its messages there.
@Suite struct PythonHandlerCutLineTests {
  @Test func `mailbox_handler ends its messages at a cut last line`() throws {
    let script = """
      import io, json, sys
      sys.path.insert(0, \(JSONText.string(PythonHandler.libraryDirectory.path)))
      import mailbox_handler
      greeting = {"protocol": "mailboxctl-handler", "versions": [1], "jobs": 1}
      text = json.dumps(greeting) + "\\n" + '{"id":"a","message":1}\\n' + '{"id":"b","message":{"x":{"y":1}'
      session = mailbox_handler.Session(stdin=io.BytesIO(text.encode()), stdout=io.BytesIO())
      print(json.dumps([message.id for message in session]))

      """
    let result = try Processes.start(
      URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script]
    ).finish(deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout == "[\"a\"]\n")
  }
}
