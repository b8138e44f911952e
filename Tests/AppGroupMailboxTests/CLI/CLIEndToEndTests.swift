import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// End-to-end tests of the built `mailboxctl` (not drain; see CLIDrainTests): stdout, stderr and
/// exit status of each subcommand.
@Suite struct CLIEndToEndTests {
  static let subcommands = [
    "drain", "enqueue", "hold", "resume", "status", "list", "show", "maintain", "quarantine",
    "watch", "demo",
  ]

  @Test func `Every subcommand prints its help on stdout and exits 0`() throws {
    let top = try Mailboxctl.run(["--help"])
    #expect(top.status == 0)
    #expect(top.stderr == "")
    #expect(top.stdout.hasPrefix("usage: mailboxctl <subcommand> [options]\n"))
    for name in Self.subcommands {
      #expect(top.stdout.contains("\n  \(name) "), "\(name)")
      let result = try Mailboxctl.run([name, "--help"])
      #expect(result.status == 0, "\(name)")
      #expect(result.stderr == "", "\(name)")
      #expect(result.stdout.hasPrefix("usage: mailboxctl \(name) [options]"), "\(name)")
      #expect(result.stdout.contains("  -h, --help"), "\(name)")
    }
    #expect(!top.stdout.contains("__demo-produce"))
  }

  @Test func `Usage errors exit 64 with the reason and a hint on stderr and nothing on stdout`()
    throws
  {
    let container = try TemporaryContainer()
    let cases: [([String], String)] = [
      (
        ["frobnicate"],
        "mailboxctl: error: unknown subcommand 'frobnicate'\n"
          + "Run 'mailboxctl --help' for the list.\n"
      ),
      (
        ["status", "--bogus"],
        "mailboxctl: error: status: unknown option '--bogus'\n"
          + "Run 'mailboxctl status --help' for usage.\n"
      ),
      (
        ["status"],
        "mailboxctl: error: status: give --container DIR or --app-group ID\n"
          + "Run 'mailboxctl status --help' for usage.\n"
      ),
      (
        ["status", "--container", container.url.path, "--app-group", "g"],
        "mailboxctl: error: status: give --container or --app-group, not both\n"
          + "Run 'mailboxctl status --help' for usage.\n"
      ),
      (
        ["status", "--container", container.url.path, "--namespace", "../x"],
        "mailboxctl: error: status: invalid namespace '../x': use 1 to 64 of A-Z a-z 0-9 . _ -, "
          + "not starting with '-' and not all dots\n"
          + "Run 'mailboxctl status --help' for usage.\n"
      ),
      (
        ["drain"] + container.arguments() + ["--limit", "0"],
        "mailboxctl: error: drain: --limit needs an integer from 1 to \(Int.max), not '0'\n"
          + "Run 'mailboxctl drain --help' for usage.\n"
      ),
      (
        ["create"] + container.arguments(namespace: "fresh") + ["--max-delivery-attempts", "0"],
        "mailboxctl: error: create: --max-delivery-attempts needs an integer from 1 to 1000000 "
          + "or 'unlimited', not '0'\n"
          + "Run 'mailboxctl create --help' for usage.\n"
      ),
      (
        ["show"] + container.arguments(),
        "mailboxctl: error: show: missing ID\n"
          + "Run 'mailboxctl show --help' for usage.\n"
      ),
      (
        ["enqueue"] + container.arguments() + ["--enqueued-at", "yesterday", "--data", "1"],
        "mailboxctl: error: enqueue: --enqueued-at needs an ISO 8601 date, not 'yesterday'\n"
          + "Run 'mailboxctl enqueue --help' for usage.\n"
      ),
      (
        ["quarantine"] + container.arguments() + ["requeue"],
        "mailboxctl: error: quarantine: quarantine requeue needs IDs or --all (not both)\n"
          + "Run 'mailboxctl quarantine --help' for usage.\n"
      ),
    ]
    for (arguments, stderr) in cases {
      let result = try Mailboxctl.run(arguments)
      #expect(result.status == 64, "\(arguments)")
      #expect(result.stdout == "", "\(arguments)")
      #expect(result.stderr == stderr, "\(arguments)")
    }
    let bare = try Mailboxctl.run([])
    #expect(bare.status == 64)
    #expect(bare.stdout == "")
    #expect(bare.stderr.hasPrefix("usage: mailboxctl <subcommand> [options]\n"))
    #expect(container.names("pending").isEmpty)
  }

  @Test func `Enqueue prints each id, and list and status show the messages in order`() throws {
    let container = try TemporaryContainer()
    let id = "0b6f5f4e-1c7a-4a8e-9d7e-3f2b1a0c9d8e"
    // A lifetime of 31 years, so a message dated 2020 has not expired.
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--message-lifetime", "1000000000"])
    #expect(created.status == 0)
    let first = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "{\"n\":1}", "--type", "demo.Job"])
    #expect(first.status == 0)
    #expect(first.stderr == "")
    let firstID = try #require(UUID(uuidString: first.stdout.trimmingCharacters(in: .newlines)))
    let second = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + [
        "--id", id.uppercased(), "--enqueued-at", "2020-01-01T00:00:00.5Z",
      ], stdin: Data("[\"from stdin\"]\n".utf8))
    #expect(second.status == 0)
    #expect(second.stdout == id + "\n")
    let list = try Mailboxctl.run(["list"] + container.arguments() + ["--json"])
    #expect(list.status == 0)
    let entries = try jsonLines(list.stdout)
    #expect(entries.map { $0["id"] as? String } == [id, firstID.uuidString.lowercased()])
    #expect(entries.map { $0["state"] as? String } == ["pending", "pending"])
    #expect(entries[0]["enqueuedAt"] as? String == "2020-01-01T00:00:00.500000Z")
    #expect(entries.map { $0["deliveryCount"] as? Int } == [0, 0])
    let text = try Mailboxctl.run(["list"] + container.arguments())
    #expect(text.lines.count == 3)
    #expect(text.lines[0].hasPrefix("STATE        ID"))
    #expect(text.lines[1].hasPrefix("pending      \(id)  2020-01-01T00:00:00.500000Z"))
    let status = try Mailboxctl.run(["status"] + container.arguments() + ["--json"])
    let counts = try #require(try jsonLines(status.stdout).first)
    #expect(counts["namespace"] as? String == "jobs")
    #expect(counts["depth"] as? Int == 2)
    #expect(counts["pending"] as? Int == 2)
    #expect(counts["delayed"] as? Int == 0)
    #expect(counts["nextDueAt"] is NSNull)
    #expect(counts["claimed"] as? Int == 0)
    #expect(counts["quarantined"] as? Int == 0)
    #expect(counts["temporaryFiles"] as? Int == 0)
    let pendingBytes = container.names("pending").reduce(0) { total, name in
      total
        + ((try? FileManager.default.attributesOfItem(
          atPath: container.area("pending").appendingPathComponent(name).path)[.size] as? Int)
          ?? 0)
    }
    #expect(counts["bytes"] as? Int == pendingBytes)
    let age = try #require(counts["oldestPendingAgeSeconds"] as? Double)
    #expect(age > 100_000_000)
    let human = try Mailboxctl.run(["status"] + container.arguments())
    #expect(human.lines.count == 13)
    #expect(human.lines[1] == "depth:            2")
    #expect(human.lines[2] == "pending:          2")
    #expect(human.lines[3] == "delayed:          0")
    #expect(human.lines[8] == "next due:         -")
    #expect(human.lines[9] == "oldest claim:     -")
    #expect(human.lines[11] == "by priority:      5: 2")
    #expect(human.lines[12] == "held:             no")
    let shown = try Mailboxctl.run(["show"] + container.arguments() + [id, "--message"])
    #expect(shown.status == 0)
    #expect(shown.stdout.contains("message type:    (none)\n"))
    // The newline after the JSON on stdin is not part of the stored message.
    #expect(shown.stdout.hasSuffix("\n[\"from stdin\"]\n"))
    #expect(!shown.stdout.hasSuffix("\n\n"))
    let typed = try Mailboxctl.run(
      ["show"] + container.arguments() + [firstID.uuidString, "--json", "--message"])
    let envelope = try #require(try jsonLines(typed.stdout).first)
    #expect(envelope["messageType"] as? String == "demo.Job")
    #expect(envelope["format"] as? Int == 1)
    #expect((envelope["message"] as? [String: Int]) == ["n": 1])
  }

  /// An explicit enqueue date already older than the lifetime is refused, not stored to expire
  /// unseen (found by a new-user trial: the enqueue printed an id, the drain then reported one
  /// message expired).
  @Test func `Enqueue refuses a message whose enqueue date is past the lifetime`() throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + [
        "--id", "0b6f5f4e-1c7a-4a8e-9d7e-3f2b1a0c9d8e", "--enqueued-at", "2020-01-01T00:00:00Z",
        "--data", "1",
      ])
    #expect(result.status == 65)
    #expect(result.stdout == "")
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: message 0b6f5f4e-1c7a-4a8e-9d7e-3f2b1a0c9d8e is older "
        + "than the mailbox's message lifetime (86400 s); nothing was enqueued ('mailboxctl "
        + "create --message-lifetime SECONDS' raises it)\n")
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
    // Without --id the refusal names no id: a generated one was never shown anywhere.
    let generated = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + [
        "--enqueued-at", "2020-01-01T00:00:00Z", "--data", "1",
      ])
    #expect(generated.status == 65)
    #expect(
      generated.stderr
        == "mailboxctl: error: enqueue: the message is older than the mailbox's message "
        + "lifetime (86400 s); nothing was enqueued ('mailboxctl create --message-lifetime "
        + "SECONDS' raises it)\n")
    #expect(container.names("pending").isEmpty)
  }

  @Test func `Enqueue --lines rejects invalid JSON with its line number and writes nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let input = "{\"a\":1}\n\n\"two\"\n{\"broken\":\n4\n"
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"], stdin: Data(input.utf8))
    #expect(result.status == 65)
    #expect(result.stdout == "")
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: line 4: not valid JSON: it ends inside the value; "
        + "nothing was enqueued\n")
    #expect(container.names("pending").isEmpty)
    #expect(container.names("tmp").isEmpty)
    let good = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines", "--json"],
      stdin: Data("1\n\n\"two\"\n{\"three\":3}\n".utf8))
    #expect(good.status == 0)
    let receipts = try jsonLines(good.stdout)
    #expect(receipts.count == 3)
    #expect(receipts.map { $0["duplicate"] as? Bool } == [false, false, false])
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(
      try jsonLines(drained.stdout).map { $0["id"] as? String }
        == receipts.map { $0["id"] as? String })
  }

  @Test func `Input that is not JSON or too large exits 65 and writes nothing`() throws {
    let container = try TemporaryContainer()
    #expect(
      try Mailboxctl.run(["create"] + container.arguments() + ["--max-payload-bytes", "120"])
        .status == 0)
    let notJSON = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "{oops"])
    #expect(notJSON.status == 65)
    #expect(
      notJSON.stderr
        == "mailboxctl: error: enqueue: not valid JSON near line 1, column 2; nothing was "
        + "enqueued\n")
    // A trailing comma, which Foundation's parsers accept but no strict reader does: refused
    // where the value should be.
    for (text, column) in [(#"{"pw":"x",}"#, 11), ("[1,2,]", 6)] {
      let lax = try Mailboxctl.run(["enqueue"] + container.arguments(), stdin: Data(text.utf8))
      #expect(lax.status == 65)
      #expect(
        lax.stderr
          == "mailboxctl: error: enqueue: not valid JSON near line 1, column \(column); nothing "
          + "was enqueued\n")
    }
    let large = try Mailboxctl.run(
      ["enqueue"] + container.arguments(),
      stdin: Data(("\"" + String(repeating: "x", count: 200) + "\"").utf8))
    #expect(large.status == 65)
    #expect(large.stderr.hasPrefix("mailboxctl: error: enqueue: the message file would be "))
    #expect(
      large.stderr.hasSuffix(
        " bytes, over the limit of 120 (the mailbox's maxPayloadBytes); nothing was enqueued\n"))
    #expect(container.names("pending").isEmpty)
  }

  @Test func `An id already present is not written again, and a full mailbox exits 75`() throws {
    let container = try TemporaryContainer()
    #expect(
      try Mailboxctl.run(["create"] + container.arguments() + ["--max-messages", "1"]).status
        == 0)
    let id = "6a1d3c9e-0f3b-4d0e-8b7a-2c5e4f1a9b3d"
    let arguments = ["enqueue"] + container.arguments() + ["--id", id, "--data", "1", "--json"]
    #expect(
      try Mailboxctl.run(arguments).stdout
        == "{\"id\":\"\(id)\",\"duplicate\":false,\"notBefore\":null}\n")
    let again = try Mailboxctl.run(arguments)
    #expect(again.status == 0)
    #expect(again.stdout == "{\"id\":\"\(id)\",\"duplicate\":true,\"notBefore\":null}\n")
    #expect(container.names("pending").count == 1)
    let full = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "2"])
    #expect(full.status == 75)
    #expect(full.stdout == "")
    #expect(
      full.stderr
        == "mailboxctl: error: enqueue: the mailbox is full (depth 1, maxMessages 1); "
        + "nothing was enqueued\n")
    #expect(container.names("pending").count == 1)
  }

  @Test func `A missing mailbox exits 66 for every reading subcommand and creates nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "absent")
    for arguments in [
      ["status"], ["list"], ["show", "x"], ["drain"], ["maintain"], ["quarantine", "list"],
      ["watch", "--timeout", "1"],
    ] {
      let result = try Mailboxctl.run([arguments[0]] + location + arguments.dropFirst())
      #expect(result.status == 66, "\(arguments)")
      #expect(result.stdout == "", "\(arguments)")
      #expect(
        result.stderr == "mailboxctl: error: \(arguments[0]): no such mailbox: "
          + container.url.path + "/AppGroupMailbox/absent ('mailboxctl namespaces --container "
          + container.url.path + "' lists the mailboxes there; 'mailboxctl create' makes one)\n",
        "\(arguments)")
    }
    #expect(!FileManager.default.fileExists(atPath: container.url.path + "/AppGroupMailbox/absent"))
    _ = try container.rawMailbox()
    let unknown = try Mailboxctl.run(["show"] + container.arguments() + [UUID().uuidString])
    #expect(unknown.status == 66)
    #expect(unknown.stderr.hasPrefix("mailboxctl: error: show: no such message: "))
  }

  /// The directory on the way that is not one is named (a new user's run of stop 35 got the
  /// list of every possible cause instead).
  @Test func `A container that cannot be opened exits 69`() throws {
    let container = try TemporaryContainer()
    let file = container.url.appendingPathComponent("file")
    try Data().write(to: file)
    let result = try Mailboxctl.run(
      ["enqueue", "--container", file.path, "--data", "1"])
    #expect(result.status == 69)
    #expect(result.stdout == "")
    #expect(
      result.stderr == "mailboxctl: error: enqueue: cannot open the mailbox at "
        + file.path + "/AppGroupMailbox/default: \(file.path) is a regular file, not a "
        + "directory, which a mailbox refuses (docs/SECURITY.md; openat on the container "
        + "failed: Not a directory (errno 20))\n")
    // A command that only looks says the mailbox is not there, and why (review of stop 35).
    let status = try Mailboxctl.run(["status", "--container", file.path])
    #expect(status.status == 66)
    #expect(
      status.stderr == "mailboxctl: error: status: no such mailbox: \(file.path)/AppGroupMailbox/"
        + "default: lstat failed: Not a directory (errno 20) (\(file.path) is a regular file, not "
        + "a directory)\n")
    // A namespace directory that is a symbolic link (to a directory) is refused by name.
    let mailboxes = container.url.appendingPathComponent("AppGroupMailbox").path
    try FileManager.default.createDirectory(
      atPath: mailboxes, withIntermediateDirectories: true)
    #expect(symlink(container.url.path, mailboxes + "/linked") == 0)
    let linked = try Mailboxctl.run(
      ["enqueue", "--container", container.url.path, "--namespace", "linked", "--data", "1"])
    #expect(linked.status == 69)
    #expect(
      linked.stderr == "mailboxctl: error: enqueue: cannot open the mailbox at \(mailboxes)"
        + "/linked: \(mailboxes)/linked is a symbolic link, not a directory, which a mailbox "
        + "refuses (docs/SECURITY.md; openat on the namespace directory failed: Not a "
        + "directory (errno 20))\n")
  }

  @Test func `--app-group resolves the container as the library does`() throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      ["enqueue", "--app-group", "group.com.example.app", "--data", "1"],
      environment: ["APP_GROUP_CONTAINER_ROOT": container.url.path])
    #expect(result.status == 0)
    let pending = container.url.appendingPathComponent(
      "group.com.example.app/AppGroupMailbox/default/pending")
    #expect(try FileManager.default.contentsOfDirectory(atPath: pending.path).count == 1)
    let invalid = try Mailboxctl.run(["status", "--app-group", ".hidden"])
    #expect(invalid.status == 64)
    #expect(
      invalid.stderr.hasPrefix(
        "mailboxctl: error: status: invalid app group identifier '.hidden': use 1 to 255 of "
          + "A-Z a-z 0-9 . _ -, not starting with '.'\n"))
    // A valid identifier with no root to put it under says so (it said "invalid").
    let rootless = try Mailboxctl.run(
      ["status", "--app-group", "group.x"],
      environment: ["APP_GROUP_CONTAINER_ROOT": "", "XDG_DATA_HOME": "", "HOME": ""])
    #expect(rootless.status == 64)
    #expect(
      rootless.stderr.hasPrefix(
        "mailboxctl: error: status: no container root for app group 'group.x': set "
          + "APP_GROUP_CONTAINER_ROOT, XDG_DATA_HOME or HOME, or give --container DIR\n"))
  }

  @Test func `Maintain recovers an abandoned claim and reports what it did`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(claimTimeout: 0.05))
    try mailbox.enqueue(Data("1".utf8))
    let claim = try #require(try mailbox.claimPending(limit: 1).first)
    #expect(
      waitUntil(deadline: 30) {
        (try? container.rawMailbox().inspector.entries(in: [.claimed]).first?.leaseExpiresAt)
          .flatMap { $0 }.map { $0 < Date() } ?? false
      })
    let result = try Mailboxctl.run(["maintain"] + container.arguments() + ["--json"])
    #expect(result.status == 0)
    #expect(
      result.stdout
        == "{\"recoveredClaims\":1,\"promotedMessages\":0,\"expiredMessages\":0,"
        + "\"staleTemporaryFiles\":0,\"quarantined\":0,\"quarantineDiscarded\":0}\n")
    #expect(container.names("claimed").isEmpty)
    #expect(container.names("pending").count == 1)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try claim.acknowledge() }
    let text = try Mailboxctl.run(["maintain"] + container.arguments())
    #expect(
      text.stdout
        == "claims recovered:         0\ndelayed made pending:     0\nmessages expired:         0\n"
        + "temporary files removed:  0\nfiles quarantined:        0\nquarantined discarded:    0\n")
  }

  /// A timer running maintain is what makes due retries pending for a .path unit: it says how
  /// many it made pending (found by a new-user trial: the count was missing).
  @Test func `Maintain reports the delayed messages it made pending`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8), notBefore: Date().addingTimeInterval(1))
    #expect(
      waitUntil(deadline: 30) {
        Date() > (try? mailbox.nextDueDate()).flatMap { $0 } ?? .distantFuture
      })
    let result = try Mailboxctl.run(["maintain"] + container.arguments() + ["--json"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("\"promotedMessages\":1,"))
    #expect(container.names("delayed").isEmpty)
    #expect(container.names("pending").count == 1)
  }

  @Test func `Quarantine list, show, requeue and purge repair a mailbox`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let undecodable = try raw.enqueue(Data("42".utf8), messageType: "Other").id
    let typed: AppGroupMailbox<String> = try container.mailbox(messageType: "Other")
    #expect(try typed.claimPending().isEmpty)
    let garbage = container.area("pending").appendingPathComponent(
      String(Int64(Date().timeIntervalSince1970 * 1_000_000)) + "-00000000000000000099-"
        + UUID().uuidString.lowercased() + "-0.msg")
    try Data("not an envelope".utf8).write(to: garbage)
    #expect(try raw.claimPending().isEmpty)
    let list = try Mailboxctl.run(["quarantine"] + container.arguments() + ["list", "--json"])
    #expect(list.status == 0)
    let entries = try jsonLines(list.stdout)
    #expect(entries.compactMap { $0["reason"] as? String } == ["malformed", "malformed"])
    #expect(entries.allSatisfy { $0["state"] as? String == "quarantined" })
    let malformed = try #require(
      entries.compactMap { $0["fileName"] as? String }.first {
        !$0.contains(undecodable.uuidString.lowercased())
      })
    let show = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["show", undecodable.uuidString])
    #expect(show.status == 0)
    #expect(show.stdout.contains("reason:          malformed\n"))
    #expect(show.stdout.contains("message type:    Other\n"))
    let unreadable = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["show", malformed])
    #expect(unreadable.stdout.contains("envelope:        unreadable"))
    let requeue = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["requeue", undecodable.uuidString, "--json"])
    #expect(requeue.status == 0)
    let outcome = try #require(try jsonLines(requeue.stdout).first)
    #expect(outcome["outcome"] as? String == "requeued")
    #expect(outcome["id"] as? String == undecodable.uuidString.lowercased())
    let again = try #require(try raw.claimPending().first)
    #expect(again.id == undecodable)
    #expect(again.deliveryCount == 1)
    #expect(again.payload == Data("42".utf8))
    try again.acknowledge()
    let notAMessage = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["requeue", malformed])
    #expect(notAMessage.status == 65)
    #expect(notAMessage.stdout == "notAMessage \(malformed)\n")
    #expect(
      notAMessage.stderr
        == "mailboxctl: quarantine: \(malformed) stays in quarantine: it is not a message this "
        + "mailbox can deliver (not a regular file, hard-linked, malformed, a newer format, "
        + "larger than the payload limit, or not one JSON value); 'quarantine show' tells which, "
        + "'mailboxctl config --max-payload-bytes' raises the limit\n")
    let missing = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["purge", UUID().uuidString])
    #expect(missing.status == 66)
    let purge = try Mailboxctl.run(
      ["quarantine"] + container.arguments() + ["purge", "--all", "--json"])
    #expect(purge.status == 0)
    // The id its name carries, as requeue's lines give it (it was always null).
    let malformedID = try #require(
      entries.first { $0["fileName"] as? String == malformed }?["id"] as? String)
    let purged = try jsonLines(purge.stdout)
    #expect(purged.map { $0["outcome"] as? String } == ["purged"])
    #expect(purged.map { $0["fileName"] as? String } == [malformed])
    #expect(purged.map { $0["id"] as? String } == [malformedID])
    #expect(container.names("quarantine").isEmpty)
    let empty = try Mailboxctl.run(["quarantine"] + container.arguments() + ["list"])
    #expect(empty.lines.count == 1)
  }

  @Test func `Watch prints a line per wake-up and exits 0 after --count`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let watch = try Mailboxctl.start(
      ["watch"] + container.arguments() + ["--count", "1", "--timeout", "60", "--json"])
    #expect(waitUntil(deadline: 30) { watch.stderr.contains("watch: waiting for changes in") })
    try mailbox.enqueue(Data("1".utf8))
    let result = try watch.finish()
    #expect(result.status == 0)
    let lines = try jsonLines(result.stdout)
    #expect(lines.count == 1)
    #expect(lines.first?["pending"] as? Int == 1)
    #expect(lines.first?["claimed"] as? Int == 0)
    #expect(lines.first?["delayed"] as? Int == 0)
    #expect(
      result.stderr
        == "mailboxctl: watch: waiting for changes in \(container.url.path)/AppGroupMailbox/jobs/pending\n"
    )
  }

  @Test(arguments: [(SIGTERM, Int32(0)), (SIGINT, Int32(130))])
  func `Watch exits 0 after SIGTERM and 130 after SIGINT`(signal: Int32, status: Int32) throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let watch = try Mailboxctl.start(["watch"] + container.arguments())
    #expect(waitUntil(deadline: 30) { watch.stderr.contains("watch: waiting") })
    watch.signal(signal)
    let result = try watch.finish()
    #expect(result.status == status)
    #expect(result.reason == .exit)
    #expect(result.stdout == "")
  }

  @Test func `Demo fills a fresh mailbox from producer processes and drains it`() throws {
    let result = try Mailboxctl.run(["demo", "--producers", "3", "--messages", "40"])
    #expect(result.status == 0)
    #expect(result.stderr == "")
    #expect(result.lines.count == 5)
    #expect(result.lines[0].hasPrefix("mailboxctl demo: a fresh mailbox at /"))
    #expect(
      result.lines[1] == "started 3 producer processes, 40 messages each; draining as they run")
    #expect(result.lines[2].hasSuffix("120 of 120 distinct, 0 duplicates, 0 out of order"))
    #expect(result.lines[3] == "summary: delivered 120, released 0, quarantined 0")
    #expect(result.lines[4] == "every message arrived exactly once, each producer's in order")
    #expect(result.lines[0].hasSuffix(" (removed when the demo finishes; --keep keeps it)"))
    let directory = String(
      result.lines[0].dropFirst("mailboxctl demo: a fresh mailbox at ".count)
        .dropLast(" (removed when the demo finishes; --keep keeps it)".count))
    #expect(directory.hasPrefix("/"))
    #expect(!FileManager.default.fileExists(atPath: directory))
    // --keep names the command that looks at what it kept, with the container, not the
    // namespace directory (found by a new user's trial: that path given as --container showed
    // nothing).
    let kept = try Mailboxctl.run(["demo", "--producers", "1", "--messages", "5", "--keep"])
    #expect(kept.status == 0, "\(kept.stderr)")
    let container = try #require(
      kept.lines.first?.dropFirst("mailboxctl demo: a fresh mailbox at ".count)
        .replacingOccurrences(of: "/AppGroupMailbox/demo", with: ""))
    defer { try? FileManager.default.removeItem(atPath: container) }
    #expect(
      kept.lines.last
        == "kept: look with 'mailboxctl status --container \(container) --namespace demo'")
    let status = try Mailboxctl.run(["status", "--container", container, "--namespace", "demo"])
    #expect(status.status == 0, "\(status.stderr)")
  }

  @Test func `Errors are coloured only on a terminal without NO_COLOR`() throws {
    let container = try TemporaryContainer()
    let plain = try Mailboxctl.run(["status"] + container.arguments(namespace: "none"))
    #expect(!plain.stderr.contains("\u{1B}"))
    let command =
      "\(Mailboxctl.url.path) status --container \(container.url.path) --namespace none"
    var environment = ProcessInfo.processInfo.environment
    environment.removeValue(forKey: "NO_COLOR")
    let coloured = try runScript(command, environment: environment)
    #expect(
      coloured.stdout.contains("mailboxctl: \u{1B}[31merror\u{1B}[0m: status: no such mailbox"))
    environment["NO_COLOR"] = "1"
    let uncoloured = try runScript(command, environment: environment)
    #expect(uncoloured.stdout.contains("mailboxctl: error: status: no such mailbox"))
    #expect(!uncoloured.stdout.contains("\u{1B}"))
    environment["NO_COLOR"] = ""
    let emptyNoColour = try runScript(command, environment: environment)
    #expect(emptyNoColour.stdout.contains("mailboxctl: \u{1B}[31merror"))
  }

  /// Runs `command` under script(1), so its stdout and stderr are a terminal.
  private func runScript(_ command: String, environment: [String: String]) throws -> Finished {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
    process.arguments = ["-qec", command, "/dev/null"]
    process.environment = environment
    let out = Pipe()
    process.standardOutput = out
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Finished(
      status: process.terminationStatus, reason: process.terminationReason,
      stdout: String(decoding: data, as: UTF8.self), stderr: "")
  }
}
