import Foundation
import Testing

@testable import AppGroupMailbox

/// `mailboxctl enqueue --priority N` and the level in `list`, `show` and `status` (issue 17
/// item 5).
@Suite struct PriorityCLITests {
  @Test func `enqueue refuses a level outside 0 to 9 with exit 64, naming the range`() throws {
    let container = try TemporaryContainer()
    for text in ["10", "-1", "high", "5.0", ""] {
      let result = try Mailboxctl.run(
        ["enqueue"] + container.arguments() + ["--priority", text, "--data", "1"])
      #expect(result.status == 64, "\(text)")
      #expect(
        result.stderr.hasPrefix(
          "mailboxctl: error: enqueue: --priority needs an integer from 0 to 9, not '\(text)'\n"),
        "\(result.stderr)")
      #expect(result.stdout == "")
    }
    #expect(container.names("pending") == [])
  }

  @Test func `Levels given to enqueue are claimed in order and shown by list, show and status`()
    throws
  {
    let container = try TemporaryContainer()
    var ids: [String] = []
    for (data, level) in [
      ("\"a\"", ["--priority", "0"]), ("\"b\"", []), ("\"c\"", ["--priority", "9"]),
    ] {
      let result = try Mailboxctl.run(
        ["enqueue"] + container.arguments() + ["--data", data] + level)
      #expect(result.status == 0, "\(result.stderr)")
      ids.append(result.stdout.trimmingCharacters(in: .newlines))
    }
    let delayed = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + [
        "--data", "\"d\"", "--priority", "7", "--delay", "600",
      ])
    #expect(delayed.status == 0)

    let list = try jsonLines(
      try Mailboxctl.run(["list"] + container.arguments() + ["--json"]).stdout)
    #expect(
      list.map { $0["id"] as? String } == [ids[2], ids[1], ids[0]] + [list.last?["id"] as? String])
    #expect(list.map { $0["priority"] as? Int } == [9, 5, 0, 7])
    #expect(list.map { $0["state"] as? String } == ["pending", "pending", "pending", "delayed"])
    let text = try Mailboxctl.run(["list"] + container.arguments() + ["--state", "pending"])
    #expect(
      text.lines[0]
        == "STATE        ID                                    ENQUEUED AT                  "
        + "SIZE  PRI  DELIVERIES  DUE AT")
    #expect(
      text.lines.dropFirst().map { $0.dropFirst(86).prefix(5) } == ["9    ", "5    ", "0    "])

    let show = try Mailboxctl.run(["show"] + container.arguments() + [ids[2]])
    #expect(show.lines.contains("priority:        9"))
    let showJSON = try jsonLines(
      try Mailboxctl.run(["show"] + container.arguments() + [ids[0], "--json"]).stdout)
    #expect(showJSON.map { $0["priority"] as? Int } == [0])

    let status = try jsonLines(
      try Mailboxctl.run(["status"] + container.arguments() + ["--json"]).stdout)
    #expect(status[0]["pendingByPriority"] as? [String: Int] == ["9": 1, "5": 1, "0": 1])
    let human = try Mailboxctl.run(["status"] + container.arguments())
    #expect(human.lines.dropLast().last == "by priority:      9: 1, 5: 1, 0: 1")

    // `mailboxctl claim` (default one message) takes the level-9 message.
    let claimed = try Mailboxctl.run(["claim"] + container.arguments())
    #expect(claimed.status == 0)
    #expect(claimed.lines.count == 1 && claimed.stdout.hasSuffix(" \(ids[2]) \"c\"\n"))
    #expect(
      try container.rawMailbox().claimPending().map(\.payload).map {
        String(decoding: $0, as: UTF8.self)
      } == ["\"b\"", "\"a\""])
    let empty = try Mailboxctl.run(["status"] + container.arguments())
    #expect(empty.lines.dropLast().last == "by priority:      -")
  }

  /// Found by a new-user trial: the refusal said only "the mailbox is full", though the policy
  /// was to discard the oldest.
  @Test func `discard-oldest refusing a lower level says why`() throws {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-messages", "1", "--overflow", "discard-oldest"])
    #expect(created.status == 0)
    let high = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "1", "--priority", "7"])
    #expect(high.status == 0)
    let low = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "2", "--priority", "3"])
    #expect(low.status == 75)
    #expect(
      low.stderr
        == "mailboxctl: error: enqueue: the mailbox is full (depth 1, maxMessages 1) "
        + "(discard-oldest deletes only pending messages of this message's priority level or "
        + "lower, and too few of them were pending that could be deleted); nothing was "
        + "enqueued\n")
    #expect(container.names("pending").count == 1)
  }

  @Test func `drain lines, claim --json and a handler's environment carry the level`() throws {
    let container = try TemporaryContainer()
    for level in ["2", "9"] {
      let result = try Mailboxctl.run(
        ["enqueue"] + container.arguments() + ["--data", level, "--priority", level])
      #expect(result.status == 0)
    }
    let claimed = try jsonLines(
      try Mailboxctl.run(["claim"] + container.arguments() + ["--json"]).stdout)
    #expect(claimed.map { $0["priority"] as? Int } == [9])
    let token = try #require(claimed.first?["token"] as? String)
    #expect(try Mailboxctl.run(["release"] + container.arguments() + [token]).status == 0)
    let out = container.url.appendingPathComponent("levels")
    let exec = try Mailboxctl.run(
      ["drain"] + container.arguments() + [
        "--limit", "1", "--exec", "sh", "-c", "echo \"$MAILBOX_PRIORITY\" >> '\(out.path)'",
      ])
    #expect(exec.status == 0)
    #expect(try String(contentsOf: out, encoding: .utf8) == "9\n")
    let drained = try jsonLines(try Mailboxctl.run(["drain"] + container.arguments()).stdout)
    #expect(drained.map { $0["priority"] as? Int } == [2])
  }
}
