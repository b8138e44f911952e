import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// `mailboxctl enqueue --dry-run`: every check of an enqueue, nothing written. The NATS bridge's
/// consume.py asks it before it takes a message, so arguments that refuse every message (a
/// `--delay` past the message lifetime: each message terminated in JetStream) are said at once.
@Suite struct CLIEnqueueDryRunTests {
  @Test func `A dry run says how many messages would go in and writes nothing`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "jobs")
    #expect(try Mailboxctl.run(["create"] + location).status == 0)
    let one = try Mailboxctl.run(
      ["enqueue"] + location + ["--dry-run", "--delay", "30"], stdin: Data(#"{"a":1}"#.utf8))
    #expect(one.status == 0)
    #expect(one.stdout == "")
    #expect(
      one.stderr
        == "mailboxctl: enqueue: dry run: 1 message would be enqueued into the mailbox; "
        + "nothing was written\n")
    let three = try Mailboxctl.run(
      ["enqueue"] + location + ["--dry-run", "--lines"], stdin: Data("1\n2\n\n3\n".utf8))
    #expect(three.status == 0)
    #expect(
      three.stderr
        == "mailboxctl: enqueue: dry run: 3 messages would be enqueued into the mailbox; "
        + "nothing was written\n")
    let counts = try container.rawMailbox(namespace: "jobs").inspector.counts()
    #expect(counts.depth == 0)
    // A mailbox that does not exist is checked against the settings it would be made with,
    // and not made.
    let missing = try Mailboxctl.run(
      ["enqueue"] + container.arguments(namespace: "other") + ["--dry-run", "--data", "1"])
    #expect(missing.status == 0)
    #expect(
      missing.stderr
        == "mailboxctl: enqueue: dry run: 1 message would be enqueued into a new mailbox with "
        + "the default settings; nothing was written\n")
    #expect(
      !FileManager.default.fileExists(
        atPath: container.url.appendingPathComponent("AppGroupMailbox/other").path))
  }

  @Test func `A dry run refuses what the enqueue would, with the same exit and error`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "jobs")
    #expect(
      try Mailboxctl.run(["create"] + location + ["--message-lifetime", "60"]).status == 0)
    let cases: [([String], String, Int32, String)] = [
      (
        ["--delay", "120"], "{}", 65,
        "the message would expire before it is due (the mailbox's message lifetime is 60 s); "
          + "nothing was enqueued ('mailboxctl config --message-lifetime SECONDS' raises it)\n"
      ),
      (
        ["--priority", "12"], "{}", 64,
        "--priority needs an integer from 0 to 9, not '12'\n"
          + "Run 'mailboxctl enqueue --help' for usage.\n"
      ),
      (
        ["--lines"], "1\n[\n", 65,
        "line 2: not valid JSON: it ends inside the value; "
          + "nothing was enqueued\n"
      ),
    ]
    for (options, input, status, error) in cases {
      let dry = try Mailboxctl.run(
        ["enqueue"] + location + options + ["--dry-run"], stdin: Data(input.utf8))
      let real = try Mailboxctl.run(["enqueue"] + location + options, stdin: Data(input.utf8))
      #expect(dry.status == status, "\(options)")
      #expect(dry.stderr == "mailboxctl: error: enqueue: " + error, "\(options)")
      #expect(real.status == dry.status, "\(options)")
      #expect(real.stderr == dry.stderr, "\(options)")
    }
    #expect(try container.rawMailbox(namespace: "jobs").inspector.counts().depth == 0)
  }
}

extension CLIEnqueueDryRunTests {
  /// Found by a review: a dry run opened the mailbox for writing, which made a missing
  /// `settings` file again with the defaults. It only reads now.
  @Test func `A dry run only reads: a mailbox missing its settings file stays so`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "jobs")
    #expect(try Mailboxctl.run(["create"] + location).status == 0)
    let settings = container.area("settings")
    try FileManager.default.removeItem(at: settings)
    let dry = try Mailboxctl.run(["enqueue"] + location + ["--dry-run", "--data", "1"])
    #expect(dry.status == 0, "\(dry.stderr)")
    #expect(!FileManager.default.fileExists(atPath: settings.path))
  }

  /// `--no-create`: a mailbox deleted under a program that enqueues into it (the NATS bridge)
  /// is not made again with the default bounds; the enqueue exits 66, nothing made.
  @Test func `--no-create refuses a missing mailbox with exit 66 and makes nothing`() throws {
    let container = try TemporaryContainer()
    let missing = container.url.appendingPathComponent("AppGroupMailbox/jobs").path
    for extra in [[], ["--dry-run"]] {
      let refused = try Mailboxctl.run(
        ["enqueue"] + container.arguments(namespace: "jobs") + ["--no-create", "--data", "1"]
          + extra)
      #expect(refused.status == 66, "\(extra)")
      #expect(
        refused.stderr
          == "mailboxctl: error: enqueue: no such mailbox: \(missing) ('mailboxctl namespaces "
          + "--container \(container.url.path)' lists the mailboxes there; 'mailboxctl create' "
          + "makes one)\n", "\(extra)")
      #expect(!FileManager.default.fileExists(atPath: missing))
    }
    #expect(try Mailboxctl.run(["create"] + container.arguments(namespace: "jobs")).status == 0)
    let stored = try Mailboxctl.run(
      ["enqueue"] + container.arguments(namespace: "jobs") + ["--no-create", "--data", "1"])
    #expect(stored.status == 0, "\(stored.stderr)")
    #expect(try container.rawMailbox(namespace: "jobs").inspector.counts().pending == 1)
  }
}

extension CLIEnqueueDryRunTests {
  /// Found by a new user's run: `config --max-payload-bytes 1` was taken, after which every
  /// enqueue was refused (the limit counts the whole file, header line included).
  @Test func `A payload limit below the smallest message file is refused with exit 64`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "jobs")
    let smallest = MailboxOptions.smallestMessageFile
    for command in ["create", "config"] {
      let refused = try Mailboxctl.run(
        [command] + location + ["--max-payload-bytes", String(smallest - 1)])
      #expect(refused.status == 64, "\(command)")
      #expect(
        refused.stderr
          == "mailboxctl: error: \(command): --max-payload-bytes \(smallest - 1) is below the "
          + "smallest message file, \(smallest) bytes (the header line and a 1-byte message; "
          + "the limit counts the whole file): every enqueue would be refused\n"
          + "Run 'mailboxctl \(command) --help' for usage.\n")
      if command == "create" {
        #expect(try Mailboxctl.run(["create"] + location).status == 0)
      }
    }
    #expect(
      try Mailboxctl.run(["config"] + location + ["--max-payload-bytes", String(smallest)])
        .status == 0)
    let stored = try Mailboxctl.run(["enqueue"] + location + ["--data", "0"])
    #expect(stored.status == 0, "\(stored.stderr)")
  }
}
