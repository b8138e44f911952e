import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 17, item 7: `status --prometheus` (checked by Prometheus' own `promtool check
/// metrics`) and `status --ages` (qshape(1)'s table) on a mailbox with messages in every area.
@Suite struct StatusMetricsTests {
  /// `promtool` from PATH or /usr/bin (Debian's prometheus package), if installed.
  static let promtool: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return (path.split(separator: ":").map(String.init) + ["/usr/bin"])
      .map { URL(fileURLWithPath: $0).appendingPathComponent("promtool") }
      .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }()

  /// A mailbox made `now`: pending c (7 minutes old), d and e (new); delayed a (3 days old,
  /// released once with a retry delay of an hour); claimed b (30 minutes old, its second
  /// delivery); one foreign file quarantined; delivery held.
  func filled(_ container: TemporaryContainer, now: Date) throws -> AppGroupRawMailbox {
    let raw = try container.rawMailbox(
      limits: .init(maxMessages: 50, messageLifetime: 864_000, maxQuarantinedFiles: 7))
    try raw.enqueue(Data("\"a\"".utf8), enqueuedAt: now.addingTimeInterval(-3 * 86_400))
    try raw.enqueue(Data("\"b\"".utf8), enqueuedAt: now.addingTimeInterval(-30 * 60))
    try raw.enqueue(Data("\"c\"".utf8), enqueuedAt: now.addingTimeInterval(-7 * 60))
    try raw.enqueue(Data("\"d\"".utf8), enqueuedAt: now)
    try raw.enqueue(Data("\"e\"".utf8), enqueuedAt: now)
    try Data("junk".utf8).write(to: container.area("pending").appendingPathComponent("junk"))
    let first = try raw.claimPending(limit: 2)
    #expect(first.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"a\"", "\"b\""])
    try first[0].release(retryAfter: 3_600)
    try first[1].release()
    let second = try raw.claimPending(limit: 1)
    #expect(second.map(\.deliveryCount) == [2])
    try raw.pause()
    return raw
  }

  @Test func `Prometheus output has exactly these gauges, held and then resumed`() throws {
    let container = try TemporaryContainer()
    let now = Date()
    let raw = try filled(container, now: now)
    let result = try Mailboxctl.run(["status"] + container.arguments() + ["--prometheus"])
    let after = Date()
    #expect(result.status == 0)
    #expect(result.stderr == "")
    var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(
      String.init)
    let agePrefix = "appgroupmailbox_oldest_pending_age_seconds{namespace=\"jobs\"} "
    let ageIndex = try #require(lines.firstIndex { $0.hasPrefix(agePrefix) })
    let age = try #require(Double(lines[ageIndex].dropFirst(agePrefix.count)))
    #expect(age >= 420 - 0.001 && age <= 420 + after.timeIntervalSince(now) + 0.001)
    lines[ageIndex] = agePrefix + "AGE"
    let g = "# TYPE appgroupmailbox_"
    #expect(
      lines == [
        "# HELP appgroupmailbox_messages Messages in the mailbox by area (pending, delayed, "
          + "claimed).",
        g + "messages gauge",
        "appgroupmailbox_messages{namespace=\"jobs\",area=\"pending\"} 3",
        "appgroupmailbox_messages{namespace=\"jobs\",area=\"delayed\"} 1",
        "appgroupmailbox_messages{namespace=\"jobs\",area=\"claimed\"} 1",
        "# HELP appgroupmailbox_max_messages The depth bound: pending plus delayed plus claimed "
          + "messages at most.",
        g + "max_messages gauge",
        "appgroupmailbox_max_messages{namespace=\"jobs\"} 50",
        "# HELP appgroupmailbox_oldest_pending_age_seconds Seconds since the oldest pending "
          + "message was enqueued; 0 when none is pending.",
        g + "oldest_pending_age_seconds gauge",
        agePrefix + "AGE",
        "# HELP appgroupmailbox_delivery_attempts Deliveries so far of the messages in the "
          + "mailbox (pending, delayed, claimed), summed.",
        g + "delivery_attempts gauge",
        "appgroupmailbox_delivery_attempts{namespace=\"jobs\"} 3",
        "# HELP appgroupmailbox_delivery_attempts_max The most deliveries so far of one message "
          + "in the mailbox; 0 when it is empty.",
        g + "delivery_attempts_max gauge",
        "appgroupmailbox_delivery_attempts_max{namespace=\"jobs\"} 2",
        "# HELP appgroupmailbox_quarantined_files Files in quarantine.",
        g + "quarantined_files gauge",
        "appgroupmailbox_quarantined_files{namespace=\"jobs\"} 1",
        "# HELP appgroupmailbox_max_quarantined_files The quarantine bound.",
        g + "max_quarantined_files gauge",
        "appgroupmailbox_max_quarantined_files{namespace=\"jobs\"} 7",
        "# HELP appgroupmailbox_held 1 while delivery is held (mailboxctl hold), else 0.",
        g + "held gauge",
        "appgroupmailbox_held{namespace=\"jobs\"} 1",
        "",
      ])
    try raw.resume()
    let resumed = try Mailboxctl.run(["status"] + container.arguments() + ["--prometheus"])
    #expect(resumed.stdout.hasSuffix("\nappgroupmailbox_held{namespace=\"jobs\"} 0\n"))
  }

  @Test(
    .enabled(
      if: isCI || promtool != nil,
      "needs promtool (Debian's prometheus package; scripts/test installs it)"))
  func `promtool check metrics accepts the output of a filled and of an empty mailbox`() throws {
    let promtool = try #require(Self.promtool, "promtool is not installed")
    let filled = try TemporaryContainer()
    _ = try self.filled(filled, now: Date())
    let empty = try TemporaryContainer()
    _ = try empty.rawMailbox()
    for container in [filled, empty] {
      let output = try Mailboxctl.run(["status"] + container.arguments() + ["--prometheus"])
      #expect(output.status == 0)
      let check = try Processes.start(
        promtool, ["check", "metrics"], stdin: Data(output.stdout.utf8)
      )
      .finish(deadline: 60)
      #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
      #expect(check.stdout + check.stderr == "")
    }
  }

  @Test func `Ages are counted in qshape's buckets, in total and per area`() throws {
    let container = try TemporaryContainer()
    _ = try filled(container, now: Date())
    let result = try Mailboxctl.run(["status"] + container.arguments() + ["--ages"])
    #expect(result.status == 0)
    #expect(
      result.stdout == """
                     T     5    10    20    40    80   160   320   640  1280 1280+
        TOTAL        5     2     1     0     1     0     0     0     0     0     1
        pending      3     2     1     0     0     0     0     0     0     0     0
        delayed      1     0     0     0     0     0     0     0     0     0     1
        claimed      1     0     0     0     1     0     0     0     0     0     0

        """)
    let both = try Mailboxctl.run(["status"] + container.arguments() + ["--ages", "--json"])
    #expect(both.status == 64)
    #expect(
      both.stderr.hasPrefix("mailboxctl: error: status: --json and --ages exclude each other\n"))
  }
}
