import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Small promises of mailboxctl(1) and `--help` held to the letter: the exit status of an
/// `--output` file that cannot be opened, a negative number as an option's value, and
/// `events --json`.
@Suite struct CLIDocumentedUsageTests {
  @Test func `An --output file that cannot be opened exits 74 and claims nothing`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let target = container.url.appendingPathComponent("absent/dir/f").path
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--output", target])
    #expect(result.status == 74)
    #expect(
      result.stderr
        == "mailboxctl: error: drain: --output: cannot open \(target): No such file or directory "
        + "(errno 2)\n")
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.deliveryCount) == [0])
  }

  @Test func `A number that begins with '-' is a value; any other such value needs --name=`()
    throws
  {
    let container = try TemporaryContainer()
    let stored = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "-1"])
    #expect(stored.status == 0, "\(stored.stderr)")
    let refused = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "-x"])
    #expect(refused.status == 64)
    #expect(
      refused.stderr.hasPrefix(
        "mailboxctl: error: enqueue: --data needs a value (--data JSON; write --data=JSON for a "
          + "value that begins with '-')"))
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(try jsonLines(drained.stdout).map { $0["message"] as? Int } == [-1])
  }

  @Test func `help SUBCOMMAND prints that subcommand's help; an unknown one is a usage error`()
    throws
  {
    for name in ["enqueue", "drain", "show"] {
      let help = try Mailboxctl.run(["help", name])
      let own = try Mailboxctl.run([name, "--help"])
      #expect(help.status == 0)
      #expect(help.stdout.hasPrefix("usage: mailboxctl \(name) "), "\(help.stdout)")
      #expect(help.stdout == own.stdout)
    }
    let unknown = try Mailboxctl.run(["help", "nosuch"])
    #expect(unknown.status == 64)
    #expect(unknown.stderr.contains("help: unknown subcommand 'nosuch'"), "\(unknown.stderr)")
    let top = try Mailboxctl.run(["help"])
    #expect(top.status == 0)
    #expect(top.stdout.contains("mailboxctl help <subcommand>"))
  }

  /// Each subcommand's details (the text after its options) fit a terminal of 100 columns;
  /// lines of some had grown to 210 as sentences were added (only the option table's lines,
  /// one option each, may be longer).
  @Test func `Every subcommand's details fit 100 columns`() throws {
    let top = try Mailboxctl.run(["help"])
    let names = top.stdout.split(separator: "\n").drop { $0 != "subcommands:" }.dropFirst()
      .prefix { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first }
    #expect(names.count >= 20, "\(top.stdout)")
    for name in names {
      let help = try Mailboxctl.run([String(name), "--help"])
      #expect(help.status == 0)
      let long = help.stdout.split(separator: "\n").filter {
        $0.count > 100 && !$0.hasPrefix("  -")
      }
      #expect(long.isEmpty, "\(name): \(long)")
    }
  }

  @Test func `events --json is accepted: its output is always JSON Lines`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let events = try Mailboxctl.start(["events"] + container.arguments() + ["--json"])
    #expect(
      waitUntil(deadline: 30) {
        events.stderr.contains("events: following") || !events.process.isRunning
      })
    try #require(events.process.isRunning, "\(events.stderr)")
    try container.rawMailbox().enqueue(Data("1".utf8))
    #expect(waitUntil(deadline: 30) { events.stdout.contains("\n") })
    events.signal(SIGTERM)
    let finished = try events.finish()
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(try jsonLines(finished.stdout).first?["event"] as? String == "enqueued")
    let help = try Mailboxctl.run(["events", "--help"])
    #expect(help.stdout.contains("--json"))
  }

  @Test func `--claim-timeout is offered where a command claims, --relaxed where it writes`()
    throws
  {
    let claiming = ["claim", "drain", "renew"]
    let writing = [
      "enqueue", "ack", "release", "cancel", "maintain", "quarantine", "migrate",
    ]
    let reading = ["status", "list", "show", "watch", "events"]
    for name in claiming + writing + reading {
      let help = try Mailboxctl.run([name, "--help"])
      #expect(help.status == 0, "\(name)")
      #expect(help.stdout.contains("--claim-timeout") == claiming.contains(name), "\(name)")
      #expect(help.stdout.contains("--relaxed") == !reading.contains(name), "\(name)")
    }
    let container = try TemporaryContainer()
    let options = container.arguments() + ["--claim-timeout", "5", "--relaxed"]
    let stored = try Mailboxctl.run(["enqueue"] + options + ["--data", "1"])
    #expect(stored.status == 0, "\(stored.stderr)")
    let swept = try Mailboxctl.run(["maintain"] + options)
    #expect(swept.status == 0, "\(swept.stderr)")
    let listed = try Mailboxctl.run(["list"] + options)
    #expect(listed.status == 0, "\(listed.stderr)")
    let claimed = try Mailboxctl.run(["claim"] + options)
    #expect(claimed.status == 0, "\(claimed.stderr)")
    let token = String(claimed.stdout.split(separator: " ").first ?? "")
    let acknowledged = try Mailboxctl.run(["ack", token] + options)
    #expect(acknowledged.status == 0, "\(acknowledged.stderr)")
  }
}
