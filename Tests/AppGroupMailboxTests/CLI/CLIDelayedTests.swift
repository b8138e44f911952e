import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// End-to-end tests of delayed delivery in `mailboxctl`: retries with backoff in `drain`,
/// `enqueue --delay` / `--not-before`, due times in `status` and `list`, and `drain --follow`
/// waking on the watcher and at due times. Real processes throughout; every deadline is a
/// correctness bound, never a timing assertion.
@Suite struct CLIDelayedTests {
  /// One line a handler recorded: the message, its delivery count, and the time it started.
  struct Delivery: Equatable {
    var message: String
    var count: Int
    var at: Double
  }

  /// A handler script that records each delivery in `out` and fails the first `failures`
  /// deliveries of the message `failing`.
  func recorder(_ out: URL, failing: String, failures: Int) -> [String] {
    [
      "--exec", "sh", "-c",
      "x=$(cat); echo \"$x $MAILBOX_DELIVERY_COUNT $(date +%s.%N)\" >> '\(out.path)'; "
        + "[ \"$x\" != '\(failing)' ] || [ \"$MAILBOX_DELIVERY_COUNT\" -gt \(failures) ]",
    ]
  }

  func deliveries(_ out: URL) -> [Delivery] {
    let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ")
      guard fields.count == 3, let count = Int(fields[1]), let at = Double(fields[2]) else {
        return nil
      }
      return Delivery(message: String(fields[0]), count: count, at: at)
    }
  }

  /// Waits until the earliest delayed message is due; returns that time.
  @discardableResult
  func waitUntilDue(_ container: TemporaryContainer) throws -> Date {
    let due = try #require(try container.rawMailbox().nextDueDate())
    #expect(waitUntil(deadline: 30) { Date() > due })
    return due
  }

  func enqueue(_ container: TemporaryContainer, _ payloads: [String]) throws -> [UUID] {
    let mailbox = try container.rawMailbox()
    return try payloads.map { try mailbox.enqueue(Data($0.utf8)).id }
  }

  @Test
  func
    `A follow drain delivers a message that fails three times exactly four times, at growing intervals, the others meanwhile`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["\"A\"", "\"M\"", "\"B\"", "\"C\""])
    let out = container.url.appendingPathComponent("out")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--retry-delay", "0.5", "--retry-jitter", "0",
      ]
        + recorder(out, failing: "\"M\"", failures: 3))
    #expect(
      waitUntil(deadline: 60) {
        deliveries(out).contains { $0.message == "\"M\"" && $0.count == 4 }
      })
    #expect(waitUntil(deadline: 30) { container.names("claimed").isEmpty })
    drain.signal(SIGTERM)
    let result = try drain.finish()
    #expect(result.status == 0)

    let all = deliveries(out)
    let retried = all.filter { $0.message == "\"M\"" }
    #expect(retried.map(\.count) == [1, 2, 3, 4])
    for other in ["\"A\"", "\"B\"", "\"C\""] {
      #expect(all.filter { $0.message == other }.map(\.count) == [1], "\(other)")
    }
    // The messages behind M were not blocked by it: both went before its second delivery (B is
    // claimed right after M's release; C after B's handler, well within M's 0.5 s delay).
    let second = try #require(all.firstIndex { $0.message == "\"M\"" && $0.count == 2 })
    #expect(all.prefix(second).map(\.message) == ["\"A\"", "\"M\"", "\"B\"", "\"C\""])
    // Each retry waited at least its delay (0.5, 1, 2 s: the message could not be claimed
    // earlier), and the gaps grow.
    let gaps = zip(retried.dropFirst(), retried).map { $0.at - $1.at }
    #expect(gaps.count == 3)
    for (gap, delay) in zip(gaps, [0.5, 1, 2]) { #expect(gap > delay, "\(gaps)") }
    #expect(gaps[0] < gaps[1] && gaps[1] < gaps[2], "\(gaps)")
    let m = ids[1].uuidString.lowercased()
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(
      Array(lines.prefix(3))
        == [0.5, 1, 2].map {
          "mailboxctl: drain: message \(m): handler exit status 1; released, retry in "
            + "\(Output.seconds($0)) s"
        })
    #expect(lines.count == 4)
    #expect(
      lines.last?.hasPrefix("mailboxctl: drain: delivered 4, released 3, quarantined 0 in ")
        == true)
    #expect(lines.last?.hasSuffix(" s; 3 handler failures; stopped by SIGTERM") == true)
    #expect(try container.rawMailbox().inspector.status().depth == 0)
  }

  @Test
  func
    `A drain without follow exits once nothing is due, status shows the delayed message, and later runs deliver it`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try enqueue(container, ["\"M\"", "\"B\"", "\"C\""])
    let out = container.url.appendingPathComponent("out")
    let handler = recorder(out, failing: "\"M\"", failures: 3)
    let first = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--retry-delay", "1", "--retry-jitter", "0"] + handler)
    #expect(first.status == 75)
    #expect(deliveries(out).map(\.message) == ["\"M\"", "\"B\"", "\"C\""])
    #expect(container.names("pending").isEmpty)
    let mailbox = try container.rawMailbox()
    let waiting = try mailbox.inspector.entries(in: [.delayed])
    #expect(waiting.map(\.id) == [ids[0]])
    #expect(waiting.map(\.deliveryCount) == [1])
    let due = try #require(waiting.first?.dueAt)
    let dueText = ISO8601.format(due)
    #expect(
      first.stderr
        == "mailboxctl: drain: message \(ids[0].uuidString.lowercased()): handler exit status 1; "
        + "released, retry in 1 s\n" + first.stderr.split(separator: "\n")[1] + "\n")
    #expect(first.stderr.contains("mailboxctl: drain: delivered 2, released 1, quarantined 0 in "))
    #expect(first.stderr.hasSuffix(" s; 1 handler failure; 1 delayed until \(dueText)\n"))

    let status = try Mailboxctl.run(["status"] + container.arguments() + ["--json"])
    #expect(status.status == 0)
    let counts = try #require(try jsonLines(status.stdout).first)
    #expect(counts["depth"] as? Int == 1)
    #expect(counts["pending"] as? Int == 0)
    #expect(counts["delayed"] as? Int == 1)
    #expect(counts["claimed"] as? Int == 0)
    #expect(counts["nextDueAt"] as? String == dueText)
    let human = try Mailboxctl.run(["status"] + container.arguments())
    #expect(human.lines[3] == "delayed:          1")
    // "(in N s)" before the due time, "(due N s ago)" after it: a slow machine (a sanitizer)
    // may run status after the one-second delay ran out.
    let when = human.lines[8].dropFirst("next due:         \(dueText) (".count)
    #expect(human.lines[8].hasPrefix("next due:         \(dueText) ("))
    #expect(
      (when.hasPrefix("in ") && when.hasSuffix(" s)"))
        || (when.hasPrefix("due ") && when.hasSuffix(" s ago)")), "\(human.lines[8])")
    let list = try Mailboxctl.run(["list"] + container.arguments() + ["--json"])
    let entries = try jsonLines(list.stdout)
    #expect(entries.map { $0["state"] as? String } == ["delayed"])
    #expect(entries.map { $0["dueAt"] as? String } == [dueText])
    #expect(entries.map { $0["deliveryCount"] as? Int } == [1])
    let text = try Mailboxctl.run(["list"] + container.arguments() + ["--state", "delayed"])
    #expect(text.lines.count == 2)
    #expect(text.lines[0].hasSuffix("DELIVERIES  DUE AT"))
    #expect(text.lines[1].hasPrefix("delayed      \(ids[0].uuidString.lowercased())  "))
    #expect(text.lines[1].hasSuffix("  1           \(dueText)"))

    // Later runs deliver it once due: it fails twice more (each run exits 75), then succeeds.
    for (run, expected) in [(2, Int32(75)), (3, 75), (4, 0)] {
      try waitUntilDue(container)
      let later = try Mailboxctl.run(
        ["drain"] + container.arguments() + ["--retry-delay", "0.1", "--retry-jitter", "0"]
          + handler)
      #expect(later.status == expected, "run \(run)")
      #expect(deliveries(out).last.map { [$0.message, String($0.count)] } == ["\"M\"", "\(run)"])
    }
    #expect(deliveries(out).map(\.count) == [1, 1, 1, 2, 3, 4])
    #expect(try mailbox.inspector.status().depth == 0)
  }

  @Test
  func `Enqueue with a delay or a not-before date waits, is listed, and is delivered once due`()
    throws
  {
    let container = try TemporaryContainer()
    let before = Date()
    let later = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--delay", "3600", "--data", "\"later\"", "--json"])
    let after = Date()
    #expect(later.status == 0)
    let receipt = try #require(try jsonLines(later.stdout).first)
    let laterText = try #require(receipt["notBefore"] as? String)
    let laterDue = try #require(ISO8601.parse(laterText))
    #expect(laterDue >= before.addingTimeInterval(3600).addingTimeInterval(-0.000_001))
    #expect(laterDue <= after.addingTimeInterval(3600))
    // Half an hour ahead: no run of the commands below, however slow, reaches it.
    let soonDue = Date(
      timeIntervalSince1970: (Date().timeIntervalSince1970 + 1800).rounded(.down))
    let soonText = ISO8601.format(soonDue)
    let soon = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--not-before", soonText, "--data", "\"soon\""])
    #expect(soon.status == 0)
    #expect(soon.stderr == "")
    let soonID = soon.stdout.trimmingCharacters(in: .newlines)
    let now = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "\"now\""])
    #expect(now.status == 0)

    let list = try jsonLines(
      try Mailboxctl.run(["list"] + container.arguments() + ["--json"]).stdout)
    #expect(list.map { $0["state"] as? String } == ["pending", "delayed", "delayed"])
    #expect(list.map { $0["dueAt"] as? String } == [nil, soonText, ISO8601.format(laterDue)])
    #expect(list[1]["id"] as? String == soonID)
    let counts = try #require(
      try jsonLines(
        try Mailboxctl.run(["status"] + container.arguments() + ["--json"]).stdout
      ).first)
    #expect(counts["pending"] as? Int == 1)
    #expect(counts["delayed"] as? Int == 2)
    #expect(counts["depth"] as? Int == 3)
    #expect(counts["nextDueAt"] as? String == soonText)

    let early = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(early.status == 0)
    #expect(try jsonLines(early.stdout).map { $0["message"] as? String } == ["now"])
    #expect(early.stderr.hasSuffix(" s; 2 delayed, the next until \(soonText)\n"))

    // A message due in about a second is delivered once due, and the two later ones wait.
    let shortDue = Date(
      timeIntervalSince1970: (Date().timeIntervalSince1970 + 1).rounded(.up))
    let short = try Mailboxctl.run(
      ["enqueue"] + container.arguments()
        + ["--not-before", ISO8601.format(shortDue), "--data", "\"short\""])
    #expect(short.status == 0)
    let shortID = short.stdout.trimmingCharacters(in: .newlines)
    #expect(waitUntil(deadline: 30) { Date() > shortDue })
    let due = try Mailboxctl.run(["drain"] + container.arguments() + ["--json"])
    #expect(due.status == 0)
    let delivered = try jsonLines(due.stdout)
    #expect(delivered.map { $0["message"] as? String } == ["short"])
    #expect(delivered.map { $0["id"] as? String } == [shortID])
    #expect(delivered.map { $0["deliveryCount"] as? Int } == [1])
    let summary = try #require(try jsonLines(due.stderr).first)
    #expect(summary["delivered"] as? Int == 1)
    #expect(summary["delayed"] as? Int == 2)
    #expect(summary["nextDueAt"] as? String == soonText)
    #expect(container.names("delayed").count == 2)
  }

  @Test(arguments: [
    (
      ["--delay", "1", "--not-before", "2030-01-01T00:00:00Z"],
      "give --delay or --not-before, not both"
    ),
    (
      ["--delay", "-1"],
      "--delay needs a number of seconds greater than 0 and at most 1000000000, not '-1'"
    ),
    (
      ["--delay", "soon"],
      "--delay needs a number of seconds greater than 0 and at most 1000000000, not 'soon'"
    ),
    (["--not-before", "tomorrow"], "--not-before needs an ISO 8601 date, not 'tomorrow'"),
  ])
  func `Invalid delay options are usage errors and write nothing`(
    options: [String], message: String
  ) throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + options + ["--data", "1"])
    #expect(result.status == 64)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: \(message)\nRun 'mailboxctl enqueue --help' for usage.\n")
    #expect(result.stdout == "")
    #expect(container.names("delayed").isEmpty && container.names("pending").isEmpty)
  }

  @Test func `A delay past the message lifetime is refused with exit 65 and nothing written`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(messageLifetime: 50))
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--delay", "100", "--data", "1"])
    #expect(result.status == 65)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: the message would expire before it is due (the "
        + "mailbox's message lifetime is 50 s); nothing was enqueued ('mailboxctl config "
        + "--message-lifetime SECONDS' raises it)\n")
    #expect(container.names("delayed").isEmpty && container.names("tmp").isEmpty)
  }

  @Test
  func `A follow drain wakes on an enqueue from another process and when a delayed message is due`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let out = container.url.appendingPathComponent("out")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--exec", "sh", "-c", "echo \"$(cat) 1 $(date +%s.%N)\" >> '\(out.path)'",
      ])
    // The first message shows the drain is running; the second arrives while it is idle.
    let first = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "0"])
    #expect(first.status == 0)
    #expect(waitUntil(deadline: 60) { deliveries(out).count == 1 })
    #expect(waitUntil(deadline: 30) { container.names("claimed").isEmpty })
    let second = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "1"])
    #expect(second.status == 0)
    // 5 s: a correctness bound (its idle wait is 60 s without a wake-up), not a latency figure.
    #expect(waitUntil(deadline: 5) { deliveries(out).count == 2 })
    let delayed = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--delay", "1", "--data", "2", "--json"])
    let receipt = try #require(try jsonLines(delayed.stdout).first)
    let dueText = try #require(receipt["notBefore"] as? String)
    let due = try #require(ISO8601.parse(dueText))
    #expect(waitUntil(deadline: 30) { deliveries(out).count == 3 })
    let last = try #require(deliveries(out).last)
    #expect(last.message == "2")
    #expect(last.at >= due.timeIntervalSince1970)
    // 20 s: a correctness bound (it woke at the due time, not at the end of its 60 s idle wait).
    #expect(Date() < due.addingTimeInterval(20))
    drain.signal(SIGTERM)
    let result = try drain.finish()
    #expect(result.status == 0)
    #expect(
      result.stderr.hasPrefix("mailboxctl: drain: delivered 3, released 0, quarantined 0 in "))
  }

  @Test func `Watch and a follow drain exit 66 when the mailbox directory is removed`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let watch = try Mailboxctl.start(["watch"] + container.arguments())
    let drain = try WatchSupport.startFollowingDrain(container)
    #expect(waitUntil(deadline: 30) { watch.stderr.contains("watch: waiting") })
    try FileManager.default.removeItem(at: container.url.appendingPathComponent("AppGroupMailbox"))
    let watched = try watch.finish()
    #expect(watched.status == 66)
    #expect(
      watched.stderr.hasSuffix(
        "mailboxctl: error: watch: the mailbox directory was deleted, moved or replaced while "
          + "the command ran\n"))
    let drained = try drain.finish()
    #expect(drained.status == 66)
    #expect(
      drained.stderr.hasSuffix(
        "mailboxctl: error: drain: the mailbox directory was deleted, moved or replaced while "
          + "the command ran\n"))
  }

  @Test(arguments: ["pending", "delayed"])
  func `A follow drain exits 66 when an area it follows is replaced`(area: String) throws {
    // Found by an adversarial session: with delayed/ replaced, the drain kept the old one and
    // never delivered a delayed message enqueued into the new one.
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let drain = try WatchSupport.startFollowingDrain(container)
    let old = container.area(area)
    try FileManager.default.moveItem(at: old, to: old.appendingPathExtension("old"))
    try FileManager.default.createDirectory(at: old, withIntermediateDirectories: false)
    let drained = try drain.finish()
    #expect(drained.status == 66, "\(drained.stderr)")
    #expect(
      drained.stderr.hasSuffix(
        "mailboxctl: error: drain: the mailbox directory was deleted, moved or replaced while "
          + "the command ran\n"))
  }
}
