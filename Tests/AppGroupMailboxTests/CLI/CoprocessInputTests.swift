import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// A `drain --coprocess` handler slow to read its input. Found by an adversarial session: drain
/// waited up to 60 s for room in the handler's stdin, renewing no lease and hearing no signal
/// meanwhile, so a second consumer recovered a message the handler still held (two handlers at
/// once) and SIGTERM went unheard for up to a minute.
@Suite struct CoprocessInputTests {
  /// Enqueues six messages of 30 KB: their lines (180 KB) do not fit a pipe (64 KiB).
  func fill(_ container: TemporaryContainer) throws -> AppGroupRawMailbox {
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100))
    let pad = String(repeating: "p", count: 30_000)
    for number in 0..<6 {
      try mailbox.enqueue(Data(#"{"n":\#(number),"pad":"\#(pad)"}"#.utf8))
    }
    return mailbox
  }

  /// A handler that reads one line, then nothing until `go` exists, then five more lines, and
  /// acknowledges all six; `reading` marks that it waits.
  func slowReader(go: URL, reading: URL) -> String {
    """
    sys.stdin.readline()
    sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
    sys.stdout.flush()
    held = [json.loads(sys.stdin.readline())["id"]]
    open(\(JSONText.string(reading.path)), "w").close()
    while not os.path.exists(\(JSONText.string(go.path))):
        time.sleep(0.01)
    held += [json.loads(sys.stdin.readline())["id"] for _ in range(5)]
    for i in held:
        sys.stdout.write(json.dumps({"id": i, "action": "ack"}) + "\\n")
    sys.stdout.flush()

    """
  }

  /// A handler that answers the greeting, reads one line and hangs.
  static let takesOneThenHangs = """
    sys.stdin.readline()
    sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
    sys.stdout.flush()
    sys.stdin.readline()
    time.sleep(600)

    """

  func handler(_ body: String, in container: TemporaryContainer) throws -> [String] {
    let script = container.url.appendingPathComponent("handler.py")
    try Data(("import json, os, sys, time\n" + body).utf8).write(to: script)
    return ["--coprocess", "/usr/bin/python3", script.path]
  }

  /// Starts `drain --jobs 6 options` with ``slowReader(go:reading:)`` and waits until the
  /// handler reads no more; returns the drain and the file that lets the handler go on.
  func startStalled(_ container: TemporaryContainer, _ options: [String]) throws -> (
    drain: StreamingProcess, go: URL
  ) {
    let go = container.url.appendingPathComponent("go")
    let reading = container.url.appendingPathComponent("reading")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--jobs", "6"] + options
        + (try handler(slowReader(go: go, reading: reading), in: container)))
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: reading.path) })
    return (drain, go)
  }

  /// A handler that answers the greeting, reads one line a byte at a time (so nothing after it
  /// leaves the pipe) and hangs.
  static let readsOneLineThenHangs = """
    def line():
        data = b""
        while not data.endswith(b"\\n"):
            data += os.read(0, 1)
    line()
    sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
    sys.stdout.flush()
    line()
    time.sleep(600)

    """

  /// Drains eight messages of `padding` bytes, one delivery allowed, with `body` as the
  /// handler, late with the one it read after 0.5 s: five handlers, five dead letters, then
  /// drain gives up; the other three never reached a handler and keep a delivery count of 0.
  /// Returns drain's stderr.
  func drainWithLateHandlers(padding: Int, body: String) throws -> String {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 100, maxPayloadBytes: 200_000, maxDeliveryAttempts: 1))
    let pad = String(repeating: "p", count: padding)
    for number in 0..<8 {
      try mailbox.enqueue(Data(#"{"n":\#(number),"pad":"\#(pad)"}"#.utf8))
    }
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "8", "--handler-timeout", "0.5"]
        + (try handler(body, in: container)), deadline: 90)
    #expect(result.status == 69, "\(result.stderr)")
    let quarantined = try mailbox.inspector.entries(in: [.quarantined])
    #expect(quarantined.count == 5)
    #expect(quarantined.allSatisfy { $0.quarantineReason == "deadletter" })
    let pending = try mailbox.inspector.entries(in: [.pending])
    #expect(pending.map(\.deliveryCount) == [0, 0, 0])
    return result.stderr
  }

  /// Found by an adversarial review: when a handler failed in a way other than through its
  /// input (here a late answer), the lines still waiting in drain for room in its stdin were
  /// dropped with it and their messages released as failed deliveries: with one delivery
  /// allowed, each was dead-lettered (and past the quarantine bound deleted) although no handler
  /// ever had it.
  @Test func `Messages whose line never reached a failed handler go back uncounted`() throws {
    // Lines of 100 KB: the one after the line a handler read never fits the pipe (64 KiB), so
    // each handler holds exactly one message. It reads a byte at a time: a handler that reads
    // ahead (Python's buffered `readline`) has bytes of the next line, which then count.
    _ = try drainWithLateHandlers(padding: 100_000, body: Self.readsOneLineThenHangs)
  }

  /// Found by an adversarial review: lines written whole into the pipe that the failed handler
  /// never read (they were still in the pipe when it was gone) were released as deliveries,
  /// and with one delivery allowed dead-lettered. Lines of 20 KB: the handler reads the first,
  /// and three more then fit the pipe (64 KiB), never read.
  @Test func `Messages whose line a failed handler left in the pipe go back uncounted`() throws {
    let stderr = try drainWithLateHandlers(padding: 20_000, body: Self.readsOneLineThenHangs)
    #expect(
      stderr.contains("4 unanswered messages released (3 of them never read: uncounted)"),
      "\(stderr)")
  }

  /// Found by an adversarial review: a line longer than the pipe, of which the handler read a
  /// part before it died, went back uncounted as "not written whole": with one delivery
  /// allowed it came back for ever (five handlers, then exit 69, then the next drain). It is a
  /// delivery: the handler had bytes of it.
  @Test func `A message a failed handler read in part is a delivery`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 100, maxPayloadBytes: 1_000_000, maxDeliveryAttempts: 1))
    try mailbox.enqueue(Data(#"{"blob":"\#(String(repeating: "x", count: 300_000))"}"#.utf8))
    let body = """
      sys.stdin.readline()
      sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
      sys.stdout.flush()
      taken = 0
      while taken < 100000:
          taken += len(os.read(0, 100000 - taken))
      sys.exit(1)

      """
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + (try handler(body, in: container)), deadline: 90)
    #expect(result.stderr.contains("1 unanswered message released\n"), "\(result.stderr)")
    #expect(try mailbox.inspector.entries(in: [.pending, .delayed]) == [])
    let quarantined = try mailbox.inspector.entries(in: [.quarantined])
    #expect(quarantined.map(\.quarantineReason) == ["deadletter"])
  }

  /// Found by an adversarial review: `--handler-timeout` counted from when drain queued a
  /// message's line, so a message that waited in drain for room in the handler's stdin (behind
  /// the ones the handler was working on) was declared late before the handler could read it.
  @Test func `--handler-timeout counts from when the handler's input has the whole line`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 100, maxPayloadBytes: 200_000))
    let pad = String(repeating: "p", count: 100_000)
    for number in 0..<4 {
      try mailbox.enqueue(Data(#"{"n":\#(number),"pad":"\#(pad)"}"#.utf8))
    }
    // One message at a time, 0.6 s each: all four together take 2.4 s, over the timeout of
    // 1 s, while none takes more than 0.6 s once its line is in the pipe.
    let oneAtATime = """
      sys.stdin.readline()
      sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
      sys.stdout.flush()
      for line in sys.stdin:
          time.sleep(0.6)
          sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "action": "ack"}) + "\\n")
          sys.stdout.flush()

      """
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "4", "--handler-timeout", "1"]
        + (try handler(oneAtATime, in: container)), deadline: 90)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("drain: delivered 4, released 0, quarantined 0"))
    #expect(try mailbox.inspector.entries(in: [.pending, .delayed, .claimed]).isEmpty)
  }

  /// Found by an adversarial review: when several messages in a handler's input were late at
  /// once, the one blamed (its delivery counted as a failure) was any of them, in a
  /// dictionary's order, often one waiting behind the message the handler was working on.
  @Test func `Of several late messages, the one whose line came first is blamed`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 4)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--jobs", "4", "--handler-timeout", "1"]
        + (try handler(Self.takesOneThenHangs, in: container)))
    #expect(waitUntil(deadline: 60) { drain.stderr.contains("unanswered for 1 s") })
    drain.signal(SIGTERM)
    let finished = try drain.finish(deadline: 60)
    #expect(
      finished.stderr.contains(
        "left message \(ids[0].uuidString.lowercased()) unanswered for 1 s"), "\(finished.stderr)")
  }

  @Test func `While the handler's input is full, drain renews every lease`() throws {
    let container = try TemporaryContainer()
    let mailbox = try fill(container)
    let (drain, go) = try startStalled(container, ["--claim-timeout", "2"])
    let claimed = { try mailbox.inspector.entries(in: [.claimed]) }
    #expect(waitUntil(deadline: 30) { (try? claimed().count) == 6 })
    let first = Dictionary(
      uniqueKeysWithValues: try claimed().map { ($0.id, $0.leaseExpiresAt ?? .distantPast) })
    // Every lease, also of the messages still waiting for room, is renewed while the handler
    // does not read (the lease is 2 s; drain renews every third of it).
    #expect(
      waitUntil(deadline: 30) {
        guard let now = try? claimed(), now.count == 6 else { return false }
        return now.allSatisfy {
          ($0.leaseExpiresAt ?? .distantPast) > first[$0.id] ?? .distantFuture
        }
      })
    #expect(try mailbox.claimPending().isEmpty)
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    let result = try drain.finish()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 6, released 0, quarantined 0")
    #expect(try container.remaining().isEmpty)
  }

  @Test func `A stop signal is heard while the handler's input is full`() throws {
    let container = try TemporaryContainer()
    _ = try fill(container)
    let (drain, _) = try startStalled(container, ["--shutdown-timeout", "0.2"])
    drain.signal(SIGTERM)
    // Before, drain went on waiting for the pipe (60 s) before it looked at the signal.
    let result = try drain.finish(deadline: 30)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(drainSummary(result.stderr)?.hasPrefix("mailboxctl: drain: delivered 0, ") == true)
    // Nothing acknowledged, nothing counted as a failure: every message is back, and those
    // whose line never reached the handler whole keep their delivery count.
    let left = try container.remaining()
    #expect(left.count == 6 && left.allSatisfy { $0.state == .pending })
    #expect(left.contains { $0.deliveryCount == 0 })
  }
}
