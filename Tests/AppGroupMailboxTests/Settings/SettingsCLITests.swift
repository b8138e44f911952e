import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Cases C26 and C27 and the `create`/`config` commands (issue 14).
@Suite struct SettingsCLITests {
  @Test func `A missing option value is a usage error, never the next option (C26)`() throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      ["enqueue", "--container", container.url.path, "--namespace", "--lines"],
      stdin: Data("{\"x\":1}\n".utf8))
    #expect(result.status == 64)
    #expect(result.stdout == "")
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: --namespace needs a value (--namespace NS; write "
        + "--namespace=NS for a value that begins with '-')\n"
        + "Run 'mailboxctl enqueue --help' for usage.\n")
    let dashed = try Mailboxctl.run(
      ["enqueue", "--container", container.url.path, "--namespace=--lines", "--data", "1"])
    #expect(dashed.status == 64)
    #expect(
      dashed.stderr
        == "mailboxctl: error: enqueue: invalid namespace '--lines': use 1 to 64 of "
        + "A-Z a-z 0-9 . _ -, not starting with '-' and not all dots\n"
        + "Run 'mailboxctl enqueue --help' for usage.\n")
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
    #expect(throws: AppGroupMailboxError.invalidNamespace) {
      _ = try container.rawMailbox(namespace: "--lines")
    }
  }

  @Test func `A consumer never quarantines what its producer was allowed to write (C27)`() throws {
    let container = try TemporaryContainer()
    let message = "\"" + String(repeating: "m", count: 70_000) + "\""
    let enqueue = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--max-payload-bytes", "200000"],
      stdin: Data(message.utf8))
    #expect(enqueue.status == 0)
    let drain = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(drain.status == 0)
    #expect(try jsonLines(drain.stdout).map { ($0["message"] as? String)?.count } == [70_000])
    #expect(container.names("quarantine").isEmpty)
    #expect(container.names("pending").isEmpty)
    // A typed consumer opened with default limits reads it too.
    _ = try Mailboxctl.run(["enqueue"] + container.arguments(), stdin: Data(message.utf8))
    let typed = try container.mailbox(String.self)
    #expect(try typed.claimPending().map(\.message.count) == [70_000])
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `create stores settings once and config shows and changes them`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let created = try Mailboxctl.run(
      ["create"] + location + ["--max-messages", "5", "--overflow", "discard-oldest"])
    #expect(created.status == 0)
    #expect(
      created.stdout
        == "namespace:         jobs\nmax messages:      5\nmax payload bytes: 65536\n"
        + "message lifetime:  86400 s\nmax quarantined:   20\nmax deliveries:    unlimited\n"
        + "overflow:          discard-oldest\nsharing:           private\nheld:              no\n")
    let again = try Mailboxctl.run(["create"] + location)
    #expect(again.status == 73)
    #expect(
      again.stderr
        == "mailboxctl: error: create: a mailbox already exists at \(container.url.path)"
        + "/AppGroupMailbox/jobs; 'mailboxctl config' shows and changes its settings\n")
    let changed = try Mailboxctl.run(
      ["config"] + location + ["--max-messages", "7", "--max-delivery-attempts", "3", "--json"])
    #expect(changed.status == 0)
    #expect(
      changed.stdout
        == "{\"namespace\":\"jobs\",\"maxMessages\":7,\"maxPayloadBytes\":65536,"
        + "\"messageLifetime\":86400,\"maxQuarantinedFiles\":20,\"maxDeliveryAttempts\":3,"
        + "\"overflow\":\"discard-oldest\",\"sharing\":\"private\",\"held\":false}\n")
    let shown = try Mailboxctl.run(["config"] + location + ["--json"])
    #expect(shown.stdout == changed.stdout)
    // A hold is in the same file, and config shows it.
    #expect(try Mailboxctl.run(["hold"] + location).status == 0)
    let held = try Mailboxctl.run(["config"] + location + ["--json"])
    #expect(held.stdout.hasSuffix(",\"held\":true}\n"), "\(held.stdout)")
    #expect(
      try Mailboxctl.run(["config"] + location).stdout.hasSuffix("\nheld:              yes\n"))
    #expect(try Mailboxctl.run(["resume"] + location).status == 0)
    let unbounded = try Mailboxctl.run(
      ["config"] + location + ["--max-delivery-attempts", "unlimited", "--json"])
    #expect(unbounded.status == 0)
    #expect(unbounded.stdout.contains("\"maxDeliveryAttempts\":null"), "\(unbounded.stdout)")
    #expect(try container.rawMailbox().settings.maxDeliveryAttempts == nil)
    let sharing = try Mailboxctl.run(["config"] + location + ["--group-shared"])
    #expect(sharing.status == 64)
    // Old limit flags still work on other subcommands, with a note; the stored bound applies.
    let old = try Mailboxctl.run(
      ["enqueue"] + location + ["--max-messages", "100", "--data", "1"])
    #expect(old.status == 0)
    #expect(
      old.stderr
        == "mailboxctl: note: --max-messages ignored: the mailbox's stored settings apply; "
        + "'mailboxctl config' shows and changes them (these options will be removed here in "
        + "the next release)\n")
    #expect(try container.rawMailbox().limits.maxMessages == 7)
    // config refuses --group-shared (above): the note does not send it there.
    let shared = try Mailboxctl.run(["status"] + location + ["--group-shared"])
    #expect(shared.status == 0)
    #expect(
      shared.stderr
        == "mailboxctl: note: --group-shared ignored: the mailbox's stored settings apply; "
        + "'mailboxctl config' shows and changes them; the sharing mode (--group-shared) is "
        + "fixed when the mailbox is created (these options will be removed here in the next "
        + "release)\n")
  }

  @Test func `A group-shared create refuses an existing namespace directory that is not`() throws {
    let container = try TemporaryContainer()
    let directory = container.url.appendingPathComponent("AppGroupMailbox/jobs")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    #expect(chmod(directory.path, 0o755) == 0)
    let location = container.arguments()
    let refused = try Mailboxctl.run(["create"] + location + ["--group-shared"])
    #expect(refused.status == 73)
    #expect(
      refused.stderr.contains("\(directory.path) exists and is not group-shared (mode 755)"),
      "\(refused.stderr)")
    #expect(
      !FileManager.default.fileExists(atPath: directory.appendingPathComponent("settings").path))
    // Made group-shared first, the same create works and stores the sharing mode.
    #expect(chmod(directory.path, 0o2770) == 0)
    let created = try Mailboxctl.run(["create"] + location + ["--group-shared", "--json"])
    #expect(created.status == 0, "\(created.stderr)")
    #expect(try container.rawMailbox().settings.permissions == .groupShared)
  }

  @Test func `config shows a lifetime to the microsecond, as stored`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["create"] + location).status == 0)
    for (value, shown) in [("0.000001", "0.000001"), ("1.5", "1.5"), ("2.0000004", "2")] {
      let json = try Mailboxctl.run(
        ["config"] + location + ["--message-lifetime", value, "--json"])
      #expect(json.status == 0, "\(json.stderr)")
      #expect(json.stdout.contains("\"messageLifetime\":\(shown),"), "\(json.stdout)")
      let text = try Mailboxctl.run(["config"] + location)
      #expect(text.stdout.contains("message lifetime:  \(shown) s\n"), "\(text.stdout)")
    }
  }

  @Test func `mailboxctl --version prints one line`() throws {
    let result = try Mailboxctl.run(["--version"])
    #expect(result.status == 0)
    #expect(result.stdout == "mailboxctl 0.2.0 (AppGroupMailbox on-disk format 1)\n")
  }

  @Test func `An enqueue that discards the oldest message says so on stderr`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let created = try Mailboxctl.run(
      ["create"] + location + ["--max-messages", "1", "--overflow", "discard-oldest"])
    #expect(created.status == 0)
    let first = try Mailboxctl.run(["enqueue"] + location + ["--data", "1"])
    #expect(first.status == 0 && first.stderr == "")
    let second = try Mailboxctl.run(["enqueue"] + location + ["--data", "2"])
    #expect(second.status == 0)
    #expect(
      second.stderr
        == "mailboxctl: enqueue: the mailbox was full: its oldest pending message of the lowest "
        + "level was deleted to make room (overflow discard-oldest)\n")
    let drained = try Mailboxctl.run(["drain"] + location)
    #expect(drained.lines.count == 1 && drained.lines[0].hasSuffix(#""message":2}"#))
  }

  /// Found by a new user's review: `config` lowered bounds below what the mailbox held and said
  /// nothing, and the next operation deleted messages (expired, dead letters, discarded).
  @Test func `config says on stderr what a lowered bound will do to what the mailbox holds`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(
      try Mailboxctl.run(
        ["create"] + location + [
          "--max-messages", "50", "--overflow", "discard-oldest", "--max-delivery-attempts", "5",
        ]
      ).status == 0)
    let old = Date().addingTimeInterval(-7_200)
    for number in 0..<5 {
      let enqueued = try Mailboxctl.run(
        ["enqueue"] + location + ["--data", "\(number)", "--enqueued-at", ISO8601.format(old)])
      #expect(enqueued.status == 0, "\(enqueued.stderr)")
    }
    let token = try #require(
      try Mailboxctl.run(["claim"] + location).stdout.split(separator: " ").first)
    #expect(try Mailboxctl.run(["release"] + location + [String(token)]).status == 0)
    // Raising or keeping bounds says nothing.
    let raised = try Mailboxctl.run(["config"] + location + ["--max-messages", "60"])
    #expect(raised.status == 0 && raised.stderr == "")
    let lowered = try Mailboxctl.run(
      ["config"] + location + [
        "--max-messages", "2", "--message-lifetime", "3600", "--max-delivery-attempts", "1",
      ])
    #expect(lowered.status == 0)
    #expect(
      lowered.stderr
        == "mailboxctl: config: 5 messages waiting to be claimed were enqueued more than 3600 s "
        + "ago: the next claim or maintain deletes them as expired, undelivered\n"
        + "mailboxctl: config: the depth (5) is over the new bound of 2: the next enqueue "
        + "deletes up to 4 pending messages, the oldest of its priority level or lower first "
        + "(overflow discard-oldest)\n"
        + "mailboxctl: config: 1 message waiting to be claimed was delivered 1 or more times: "
        + "at the next claim it goes to quarantine as a dead letter\n")
    // config itself deleted nothing.
    #expect(try container.rawMailbox().inspector.entries(in: [.pending]).count == 5)
  }

  /// Found by an adversarial review: the notes counted claimed messages as ones a claim would
  /// expire, and promised a discard-oldest enqueue would delete pending messages when deleting
  /// them all would not make room (it then evicts nothing deliverable and refuses).
  @Test func `config's notes leave claimed messages to their holders`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(
      try Mailboxctl.run(
        ["create"] + location + ["--max-messages", "50", "--overflow", "discard-oldest"]
      ).status == 0)
    let old = ISO8601.format(Date().addingTimeInterval(-7_200))
    for number in 0..<6 {
      #expect(
        try Mailboxctl.run(["enqueue"] + location + ["--data", "\(number)", "--enqueued-at", old])
          .status == 0)
    }
    #expect(try Mailboxctl.run(["claim"] + location + ["--limit", "3"]).status == 0)
    let lowered = try Mailboxctl.run(
      ["config"] + location + ["--max-messages", "3", "--message-lifetime", "3600"])
    #expect(lowered.status == 0)
    #expect(
      lowered.stderr
        == "mailboxctl: config: 3 messages waiting to be claimed were enqueued more than 3600 s "
        + "ago: the next claim or maintain deletes them as expired, undelivered\n"
        + "mailboxctl: config: the depth (6) is over the new bound of 3: enqueues are refused "
        + "until claimed or delayed messages leave: deleting every pending message would not "
        + "make room (overflow discard-oldest)\n")
    // As said: the enqueue is refused and evicts nothing deliverable; the three pending
    // messages it found expired it deleted as a claim would (discard-oldest takes what no
    // claim would deliver out of line first), and the claimed ones stay with their holders.
    let refused = try Mailboxctl.run(["enqueue"] + location + ["--data", "7"])
    #expect(refused.status == 75)
    let inspector = try container.rawMailbox().inspector
    #expect(try inspector.entries(in: [.pending]).isEmpty)
    #expect(try inspector.entries(in: [.claimed]).count == 3)
  }

  /// Found by an adversarial review: choosing discard-oldest for a mailbox over its bound (lowered
  /// before, under reject-newest) said nothing, and the next enqueue deleted the difference.
  @Test func `config says what choosing discard-oldest over the bound deletes`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["create"] + location + ["--max-messages", "50"]).status == 0)
    for number in 0..<6 {
      #expect(try Mailboxctl.run(["enqueue"] + location + ["--data", "\(number)"]).status == 0)
    }
    #expect(try Mailboxctl.run(["config"] + location + ["--max-messages", "3"]).status == 0)
    let chosen = try Mailboxctl.run(["config"] + location + ["--overflow", "discard-oldest"])
    #expect(chosen.status == 0)
    #expect(
      chosen.stderr
        == "mailboxctl: config: the depth (6) is over the bound of 3: the next enqueue deletes "
        + "up to 4 pending messages, the oldest of its priority level or lower first (overflow "
        + "discard-oldest)\n")
    // Choosing it again, or reject-newest, says nothing new.
    let again = try Mailboxctl.run(["config"] + location + ["--overflow", "discard-oldest"])
    #expect(again.status == 0 && again.stderr == "")
    #expect(try container.rawMailbox().inspector.entries(in: [.pending]).count == 6)
  }
}
