import AppGroupMailbox
import Foundation

/// `mailboxctl status`: counts and ages of one namespace.
let statusCommand = Subcommand(
  spec: CommandSpec(
    name: "status",
    summary: "Show counts: pending, delayed, claimed, quarantined, temporary files, ages, bytes.",
    options: MailboxOptions.reading([
      MailboxOptions.json,
      .flag("--prometheus", "Print the Prometheus text format (node exporter textfile collector)."),
      .flag("--ages", "Print counts of messages by age bucket in minutes, as qshape(1) does."),
    ]),
    details: """
      Ages are in seconds: the oldest pending message since its enqueue, the oldest claim since it
      was taken or last renewed. Delayed messages (a not-before time, or released with a retry
      delay) are not pending yet; "next due" is when the first becomes claimable. A due message
      stays in delayed/ (and is counted and listed as delayed) until a claim, an enqueue or
      'mailboxctl maintain' moves it to pending/; a claim takes it all the same (unless delivery
      is held or it has expired). Depth is pending + delayed + claimed, what --max-messages
      bounds. Read from file names and sizes, and for the oldest claim its file's status-change
      time (renaming or renewing a claim sets it). --json, --prometheus and --ages exclude each
      other. JSON: {"namespace", "depth", "pending",
      "delayed", "claimed", "quarantined", "temporaryFiles", "oldestPendingAgeSeconds",
      "nextDueAt", "oldestClaimAgeSeconds", "bytes", "held", "pendingByPriority"}; absent values
      are null. "held" is true while delivery is held ('mailboxctl hold'; claims return nothing
      until 'resume'). "pendingByPriority" counts the pending messages of each priority level
      present, as {"LEVEL": COUNT} (text: "by priority", highest level first, "-" when none
      pending).

      --prometheus prints gauges labelled namespace="NS", each with HELP and TYPE lines:
      appgroupmailbox_messages{area="pending|delayed|claimed"}, _max_messages,
      _oldest_pending_age_seconds (0 when none), _delivery_attempts (deliveries so far of
      the messages in the mailbox, summed), _delivery_attempts_max, _quarantined_files,
      _max_quarantined_files and _held (1 or 0). Write it to a file in the textfile
      collector's directory through a temporary file and mv (docs/systemd/).

      --ages prints a table as qshape(1) does: the total (T) and the messages whose age
      in minutes is at most 5, 10, 20, 40, 80, 160, 320, 640, 1280 (each column counts those
      older than the column before), and older (1280+), for all (TOTAL) and per area.
      Age is since the enqueue time 'list' shows (for a delayed message its place in line;
      a time still to come counts as 0).
      """),
  run: { arguments in
    let formats = ["--json", "--prometheus", "--ages"].filter { arguments.flag($0) }
    guard formats.count <= 1 else {
      throw CommandFailure(.usage, "\(formats.joined(separator: " and ")) exclude each other")
    }
    let (inspector, location) = try MailboxOptions.openForReading(arguments)
    let status: AppGroupMailboxStatus
    let now = Date()
    var metrics: StatusMetrics?
    var byPriority: [(level: Int, count: Int)] = []
    do {
      let report = try inspector.statusWithPriorities()
      status = report.status
      byPriority = report.pendingByPriority.sorted { $0.key > $1.key }
        .map { (level: $0.key, count: $0.value) }
      if arguments.flag("--prometheus") || arguments.flag("--ages") {
        metrics = StatusMetrics(
          namespace: location.namespace, status: status,
          messages: try inspector.messageSummaries(),
          settings: inspector.settings, held: inspector.isHeld, now: now)
      }
    } catch {
      throw CommandFailure(error, while: "")
    }
    if let metrics {
      try Output.data(arguments.flag("--ages") ? metrics.ages : metrics.prometheus)
      return .success
    }
    let pendingAge = status.oldestPendingEnqueuedAt.map { max(0, now.timeIntervalSince($0)) }
    let claimAge = status.oldestClaimedAt.map { max(0, now.timeIntervalSince($0)) }
    if arguments.flag("--json") {
      var object = JSONObject()
      object.add("namespace", location.namespace)
      object.add("depth", status.depth)
      object.add("pending", status.pending)
      object.add("delayed", status.delayed)
      object.add("claimed", status.claimed)
      object.add("quarantined", status.quarantined)
      object.add("temporaryFiles", status.temporaryFiles)
      object.add("oldestPendingAgeSeconds", seconds: pendingAge)
      object.add("nextDueAt", date: status.nextDueAt)
      object.add("oldestClaimAgeSeconds", seconds: claimAge)
      object.add("bytes", status.bytes)
      object.add("held", inspector.isHeld)
      var levels = JSONObject()
      for (level, count) in byPriority { levels.add(String(level), count) }
      object.add("pendingByPriority", rawJSON: Data(levels.text.utf8))
      try Output.data(object.text + "\n")
    } else {
      func age(_ seconds: Double?) -> String {
        seconds.map { String(format: "%.1f s", $0) } ?? "-"
      }
      let nextDue = status.nextDueAt.map { due in
        let wait = due.timeIntervalSince(now)
        return ISO8601.format(due)
          + (wait > 0
            ? " (in " + String(format: "%.1f s", wait) + ")"
            : " (due " + String(format: "%.1f s", -wait) + " ago)")
      }
      let rows = [
        ("namespace", location.namespace),
        ("depth", String(status.depth)),
        ("pending", String(status.pending)),
        ("delayed", String(status.delayed)),
        ("claimed", String(status.claimed)),
        ("quarantined", String(status.quarantined)),
        ("temporary files", String(status.temporaryFiles)),
        ("oldest pending", age(pendingAge)),
        ("next due", nextDue ?? "-"),
        ("oldest claim", age(claimAge)),
        ("bytes", String(status.bytes)),
        (
          "by priority",
          byPriority.isEmpty
            ? "-" : byPriority.map { "\($0.level): \($0.count)" }.joined(separator: ", ")
        ),
        ("held", inspector.isHeld ? "yes" : "no"),
      ]
      try Output.data(
        rows.map { $0.0 + ":" + String(repeating: " ", count: 17 - $0.0.count) + $0.1 + "\n" }
          .joined())
    }
    return .success
  })
