import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// End-to-end tests of `mailboxctl drain`: delivery, handlers, failures, timeouts, signals.
@Suite struct CLIDrainTests {
  /// Enqueues JSON payloads through the library; returns their ids.
  @discardableResult
  func enqueue(_ container: TemporaryContainer, _ payloads: [String]) throws -> [UUID] {
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 10_000))
    return try payloads.map { try mailbox.enqueue(Data($0.utf8)).id }
  }

  /// Waits until the earliest delayed message is due (a correctness bound of 30 s, not a
  /// timing assertion); returns that due time.
  @discardableResult
  func waitUntilDue(_ container: TemporaryContainer) throws -> Date {
    let due = try #require(try container.rawMailbox().nextDueDate())
    #expect(waitUntil(deadline: 30) { Date() > due })
    return due
  }

  func summary(_ stderr: String) -> String? {
    stderr.split(separator: "\n").last { $0.hasPrefix("mailboxctl: drain: delivered") }
      .map { String($0.split(separator: " in ").first!) }
  }

  @Test func `Drain prints JSON Lines oldest first and acknowledges each message`() throws {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["{\"n\":1}", "\"two\"", "[3,\n 3]"])
    let mailbox = try container.rawMailbox()
    let hourAgo = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))
    let older = try mailbox.enqueue(
      Data("0".utf8), id: UUID(), enqueuedAt: hourAgo, messageType: "t"
    )
    .id
    let result = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(result.status == 0)
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 4, released 0, quarantined 0")
    try #require(result.lines.count == 4)
    #expect(
      result.lines[0]
        == "{\"id\":\"\(older.uuidString.lowercased())\",\"enqueuedAt\":"
        + "\"\(ISO8601.format(hourAgo))\",\"deliveryCount\":1,\"messageType\":\"t\",\"payloadVersion\":1,"
        + "\"priority\":5,\"message\":0}"
    )
    let lines = try jsonLines(result.stdout)
    #expect(lines.dropFirst().map { $0["id"] as? String } == ids.map { $0.uuidString.lowercased() })
    #expect(
      result.lines[3].hasSuffix(
        ",\"messageType\":\"\",\"payloadVersion\":1,\"priority\":5,\"message\":[3,  3]}"))
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
    let json = try Mailboxctl.run(["drain"] + container.arguments() + ["--json"])
    let stats = try #require(try jsonLines(json.stderr).first)
    #expect(stats["delivered"] as? Int == 0)
    #expect(stats["stoppedBy"] is NSNull)
  }

  @Test func `Drain --exec hands the message on stdin and its facts in the environment`() throws {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["{\"text\":\"héllo\"}", "2"])
    let out = container.url.appendingPathComponent("out")
    let script =
      "{ printf '%s|%s|%s|%s|%s|' \"$MAILBOX_ID\" \"$MAILBOX_DELIVERY_COUNT\" "
      + "\"$MAILBOX_NAMESPACE\" \"$MAILBOX_MESSAGE_TYPE\" \"$MAILBOX_ENQUEUED_AT\"; cat; echo; } "
      + ">> '\(out.path)'"
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", "sh", "-c", script])
    #expect(result.status == 0)
    #expect(result.stdout == "")
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 2, released 0, quarantined 0")
    let lines = try String(contentsOf: out, encoding: .utf8).split(separator: "\n")
    #expect(lines.count == 2)
    let fields = lines.map { $0.split(separator: "|", omittingEmptySubsequences: false) }
    #expect(fields.map { String($0[0]) } == ids.map { $0.uuidString.lowercased() })
    #expect(fields.map { String($0[1]) } == ["1", "1"])
    #expect(fields.map { String($0[2]) } == ["jobs", "jobs"])
    #expect(fields.map { String($0[3]) } == ["", ""])
    #expect(fields.map { ISO8601Check.isValid(String($0[4])) } == [true, true])
    #expect(fields.map { String($0[5]) } == ["{\"text\":\"héllo\"}", "2"])
    #expect(container.names("pending").isEmpty)
  }

  @Test
  func `A failing handler's message waits out its retry delay and does not block the ones behind`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1", "2", "3"])
    let out = container.url.appendingPathComponent("out")
    let failTwo = "x=$(cat); echo \"$x $MAILBOX_DELIVERY_COUNT\" >> '\(out.path)'; [ \"$x\" != 2 ]"
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--retry-delay", "0.2", "--retry-jitter", "0", "--exec", "sh", "-c", failTwo,
      ])
    #expect(result.status == 75)
    #expect(try String(contentsOf: out, encoding: .utf8) == "1 1\n2 1\n3 1\n")
    #expect(
      result.stderr.hasPrefix(
        "mailboxctl: drain: message \(ids[1].uuidString.lowercased()): handler exit status 1; "
          + "released, retry in 0.2 s\n"))
    #expect(
      summary(result.stderr)
        == "mailboxctl: drain: delivered 2, released 1, quarantined 0")
    let mailbox = try container.rawMailbox()
    #expect(try mailbox.inspector.entries(in: [.pending, .claimed]).isEmpty)
    #expect(container.names("pending").isEmpty)
    let delayed = try mailbox.inspector.entries(in: [.delayed])
    #expect(delayed.map(\.id) == [ids[1]])
    #expect(delayed.map(\.deliveryCount) == [1])
    let due = try #require(delayed.first?.dueAt)
    #expect(
      result.stderr.hasSuffix(
        " s; 1 handler failure; 1 delayed until \(ISO8601.format(due))\n"))
    try waitUntilDue(container)
    let rerun = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--exec", "sh", "-c", "echo \"$(cat) $MAILBOX_DELIVERY_COUNT\" >> '\(out.path)'",
      ])
    #expect(rerun.status == 0)
    #expect(try String(contentsOf: out, encoding: .utf8) == "1 1\n2 1\n3 1\n2 2\n")
  }

  @Test func `Max delivery attempts turns a handler that keeps failing into a dead letter`() throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(maxDeliveryAttempts: 2))
    try enqueue(container, ["1"])
    let arguments =
      ["drain"] + container.arguments() + ["--retry-delay", "0.1", "--exec", "false"]
    let first = try Mailboxctl.run(arguments)
    #expect(first.status == 75)
    #expect(container.names("delayed").count == 1)
    try waitUntilDue(container)
    // The second failure is the last delivery allowed: a dead letter now, no retry to wait for.
    let last = try Mailboxctl.run(arguments)
    #expect(last.status == 75)
    #expect(summary(last.stderr) == "mailboxctl: drain: delivered 0, released 0, quarantined 1")
    #expect(container.names("delayed") == [])
    #expect(container.names("quarantine").count == 1)
    #expect(container.names("quarantine").first?.contains("-deadletter-") == true)
  }

  @Test func `A handler past --handler-timeout gets SIGTERM, then SIGKILL, and is released`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1", "2"])
    let ignoreTerm =
      "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
      + "if sys.stdin.read() == '1\\n':\n    time.sleep(600)\n"
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--handler-timeout", "0.5", "--retry-jitter", "0", "--exec", "/usr/bin/python3", "-c",
        ignoreTerm,
      ])
    #expect(result.status == 75)
    #expect(
      result.stderr.hasPrefix(
        "mailboxctl: drain: message \(ids[0].uuidString.lowercased()): handler timed out; "
          + "released, retry in 1 s\n"))
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 1, released 1, quarantined 0")
    let left = try container.rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.id) == [ids[0]])
    #expect(left.map(\.state) == [.delayed])
    #expect(left.map(\.deliveryCount) == [1])
  }

  @Test func `Jobs run handlers in parallel`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, ["1", "2", "3", "4"])
    let marks = container.url.appendingPathComponent("marks")
    try FileManager.default.createDirectory(at: marks, withIntermediateDirectories: true)
    // Each handler marks its start, then waits (at most 60 s) until all four have started:
    // with fewer than four at once it fails.
    let script =
      "touch '\(marks.path)'/$MAILBOX_ID; i=0; while [ $(ls '\(marks.path)' | wc -l) -lt 4 ]; do "
      + "i=$((i+1)); [ $i -gt 6000 ] && exit 1; sleep 0.01; done"
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "4", "--exec", "sh", "-c", script])
    #expect(result.status == 0)
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 4, released 0, quarantined 0")
  }

  @Test func `Limit stops after N messages and the rest stay pending`() throws {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1", "2", "3", "4", "5"])
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--limit", "2"])
    #expect(result.status == 0)
    #expect(try jsonLines(result.stdout).map { $0["message"] as? Int } == [1, 2])
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == Array(ids.suffix(3)))
    #expect(pending.map(\.deliveryCount) == [0, 0, 0])
  }

  @Test func `A follow drain with a timeout stops claiming when time is up and exits 0`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, ["1"])
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--follow", "--timeout", "0.3"])
    #expect(result.status == 0)
    #expect(try jsonLines(result.stdout).map { $0["message"] as? Int } == [1])
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 1, released 0, quarantined 0")
  }

  @Test(arguments: [(SIGTERM, Int32(0), "SIGTERM"), (SIGINT, Int32(130), "SIGINT")])
  func `A follow drain delivers what arrives and exits 0 after SIGTERM, 130 after SIGINT`(
    signal: Int32, status: Int32, name: String
  ) throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let out = container.url.appendingPathComponent("out")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--exec", "sh", "-c", "cat >> '\(out.path)'",
      ])
    try enqueue(container, ["1"])
    #expect(waitUntil(deadline: 60) { (try? String(contentsOf: out, encoding: .utf8)) == "1\n" })
    try enqueue(container, ["2"])
    #expect(
      waitUntil(deadline: 60) { (try? String(contentsOf: out, encoding: .utf8)) == "1\n2\n" })
    #expect(waitUntil(deadline: 30) { container.names("claimed").isEmpty })
    drain.signal(signal)
    let result = try drain.finish()
    #expect(result.status == status)
    #expect(result.reason == .exit)
    #expect(
      result.stderr.hasPrefix("mailboxctl: drain: delivered 2, released 0, quarantined 0 in "))
    #expect(result.stderr.hasSuffix("; stopped by \(name)\n"))
  }

  /// Also a handler that exits 0 when stopped (found by an adversarial session: drain
  /// acknowledged its message, though the handler was interrupted, not finished).
  @Test(arguments: [
    #"touch "$MAILBOX_CONTAINER/ready"; exec sleep 600"#,
    #"trap 'exit 0' TERM; touch "$MAILBOX_CONTAINER/ready"; sleep 600 & wait"#,
  ])
  func `A stop signal releases a handler that outlives the shutdown timeout`(script: String)
    throws
  {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1"])
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--shutdown-timeout", "0.2", "--exec", "sh", "-c", script,
      ])
    let ready = container.url.appendingPathComponent("ready").path
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: ready) })
    drain.signal(SIGTERM)
    let result = try drain.finish()
    #expect(result.status == 0)
    #expect(!result.stderr.contains("handler"))
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 0, released 1, quarantined 0")
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [1])
  }

  @Test func `A handler that is not found exits 69 and one that cannot start exits 71`() throws {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1"])
    let missing = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", "no-such-command-here"])
    #expect(missing.status == 69)
    #expect(
      missing.stderr
        == "mailboxctl: error: drain: --exec: command not found: no-such-command-here\n")
    #expect(
      try container.rawMailbox().inspector.entries(in: [.pending]).map(\.deliveryCount) == [0])
    // A script without a #! line: execve(2) refuses it (ENOEXEC), and posix_spawn does not
    // fall back to /bin/sh as a shell would; the error says what is missing.
    let broken = container.url.appendingPathComponent("broken")
    try Data("cat >/dev/null\n".utf8).write(to: broken)
    chmod(broken.path, 0o755)
    let unstartable = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", broken.path])
    #expect(unstartable.status == 71)
    #expect(
      unstartable.stderr.hasSuffix(
        "mailboxctl: error: drain: --exec: cannot start \(broken.path): Exec format error "
          + "(errno 8) (not a program: a script needs a first line '#!' naming its interpreter, "
          + "such as #!/bin/sh)\n"), "\(unstartable.stderr)")
    // A #! line naming a missing interpreter: execve(2) fails with ENOENT, which named the
    // script itself (found by an adversarial review); the error names the #! line.
    try Data("#! /no/such/interpreter -x\ncat >/dev/null\n".utf8).write(to: broken)
    let noInterpreter = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", broken.path])
    #expect(noInterpreter.status == 71)
    #expect(
      noInterpreter.stderr.hasSuffix(
        "mailboxctl: error: drain: --exec: cannot start \(broken.path): No such file or "
          + "directory (errno 2) (its '#!' line names the interpreter /no/such/interpreter, "
          + "which cannot be run)\n"), "\(noInterpreter.stderr)")
    #expect(try container.rawMailbox().inspector.entries(in: [.pending]).map(\.id) == ids)
    // A script that cannot be executed itself (its mode changed after drain's look at start):
    // the #! line's interpreter was blamed (found by an adversarial review).
    try Data("#!/bin/sh\ncat >/dev/null\n".utf8).write(to: broken)
    chmod(broken.path, 0o644)
    #expect(
      ExecLookup.startHint(broken.path, error: EACCES)
        == " (this user may not execute it: its mode, or a directory on its path, refuses it)")
    chmod(broken.path, 0o755)
    #expect(ExecLookup.startHint(broken.path, error: EACCES) == "")
  }

  @Test
  func `A malformed file is quarantined, counted, and the valid messages around it delivered`()
    throws
  {
    let container = try TemporaryContainer()
    try enqueue(container, ["1"])
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000)
    try Data("{broken".utf8).write(
      to: container.area("pending").appendingPathComponent(
        String(micros) + "-00000000000000000050-" + UUID().uuidString.lowercased() + "-0.msg"))
    try enqueue(container, ["3"])
    let result = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(result.status == 0)
    #expect(try jsonLines(result.stdout).map { $0["message"] as? Int } == [1, 3])
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 2, released 0, quarantined 1")
  }

  @Test func `A handler that outlives a third of the claim timeout has its lease renewed`() throws {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["1"])
    let release = container.url.appendingPathComponent("release")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--claim-timeout", "3", "--exec", "sh", "-c",
        "while [ ! -e '\(release.path)' ]; do sleep 0.01; done",
      ])
    let mailbox = try container.rawMailbox()
    func lease() -> Date? {
      (try? mailbox.inspector.entries(in: [.claimed]))?.first?.leaseExpiresAt
    }
    #expect(waitUntil(deadline: 60) { lease() != nil })
    let first = try #require(lease())
    #expect(waitUntil(deadline: 60) { (lease() ?? first) > first })
    try Data().write(to: release)
    let result = try drain.finish()
    #expect(result.status == 0)
    #expect(summary(result.stderr) == "mailboxctl: drain: delivered 1, released 0, quarantined 0")
    #expect(try mailbox.inspector.status().pending == 0)
    _ = ids
  }

  @Test func `A progress line appears only when stderr is a terminal`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, ["1", "2"])
    let plain = try Mailboxctl.run(["drain"] + container.arguments() + ["--limit", "1"])
    #expect(!plain.stderr.contains("\r"))
    #expect(plain.stderr.split(separator: "\n").count == 1)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
    process.arguments = [
      "-qec",
      "\(Mailboxctl.url.path) drain --container \(container.url.path) --namespace jobs "
        + "--exec true", "/dev/null",
    ]
    let out = Pipe()
    process.standardOutput = out
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    try process.run()
    let terminal = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    #expect(terminal.contains("\r\u{1B}[Kdelivered 0 (0.0/s), 1 running, 0 pending"))
    #expect(terminal.contains("mailboxctl: drain: delivered 1, released 0, quarantined 0 in "))
  }
}

enum ISO8601Check {
  /// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
  static func isValid(_ text: String) -> Bool {
    text.count == 27 && text.hasSuffix("Z") && text.dropFirst(10).first == "T"
  }
}
