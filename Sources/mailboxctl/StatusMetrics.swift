import AppGroupMailbox
import Foundation

/// What `status --prometheus` and `status --ages` print: one namespace's figures for the
/// node exporter's textfile collector, and its messages counted by age as Postfix's qshape(1)
/// does.
struct StatusMetrics {
  let namespace: String
  let status: AppGroupMailboxStatus
  /// The pending, delayed and claimed messages (ages and delivery counts come from them).
  let messages: [AppGroupMailboxInspector.MessageSummary]
  let settings: AppGroupMailboxSettings
  let held: Bool
  let now: Date

  /// The areas whose messages are counted, in output order.
  static let areas: [(name: String, state: AppGroupMailboxEntry.State)] = [
    ("pending", .pending), ("delayed", .delayed), ("claimed", .claimed),
  ]

  /// The upper bounds of the age buckets in minutes (qshape(1)'s defaults): a message falls in
  /// the first bucket whose bound its age does not exceed, else in the last (`1280+`).
  static let bucketMinutes = [5, 10, 20, 40, 80, 160, 320, 640, 1280]

  /// The Prometheus text exposition format (version 0.0.4), every sample labelled with the
  /// namespace, each metric with its `# HELP` and `# TYPE` lines; all are gauges (a snapshot
  /// read from file names and sizes, nothing counted across runs).
  var prometheus: String {
    let label = "namespace=\"\(namespace)\""
    var lines: [String] = []
    func metric(_ name: String, _ help: String, _ samples: [(labels: String, value: String)]) {
      lines.append("# HELP appgroupmailbox_\(name) \(help)")
      lines.append("# TYPE appgroupmailbox_\(name) gauge")
      for sample in samples {
        lines.append("appgroupmailbox_\(name){\(label)\(sample.labels)} \(sample.value)")
      }
    }
    let counts = [status.pending, status.delayed, status.claimed]
    metric(
      "messages", "Messages in the mailbox by area (pending, delayed, claimed).",
      zip(Self.areas, counts).map { (",area=\"\($0.0.name)\"", String($0.1)) })
    metric(
      "max_messages", "The depth bound: pending plus delayed plus claimed messages at most.",
      [("", String(settings.maxMessages))])
    let age = status.oldestPendingEnqueuedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0
    metric(
      "oldest_pending_age_seconds",
      "Seconds since the oldest pending message was enqueued; 0 when none is pending.",
      [("", String(format: "%.3f", age))])
    let attempts = messages.map(\.deliveryCount)
    metric(
      "delivery_attempts",
      "Deliveries so far of the messages in the mailbox (pending, delayed, claimed), summed.",
      [("", String(attempts.reduce(0, +)))])
    metric(
      "delivery_attempts_max",
      "The most deliveries so far of one message in the mailbox; 0 when it is empty.",
      [("", String(attempts.max() ?? 0))])
    metric(
      "quarantined_files", "Files in quarantine.", [("", String(status.quarantined))])
    metric(
      "max_quarantined_files", "The quarantine bound.",
      [("", String(settings.maxQuarantinedFiles))])
    metric(
      "held", "1 while delivery is held (mailboxctl hold), else 0.",
      [("", held ? "1" : "0")])
    return lines.joined(separator: "\n") + "\n"
  }

  /// Counts of messages by age bucket: the total, then one count per bucket of
  /// ``bucketMinutes`` and one for older messages. Age is since the message's place in line
  /// (the enqueue time `list` shows); a time in the future counts as age 0.
  func ageCounts(_ state: AppGroupMailboxEntry.State?) -> [Int] {
    var counts = Array(repeating: 0, count: Self.bucketMinutes.count + 2)
    for message in messages where state == nil || message.state == state {
      let minutes = max(0, now.timeIntervalSince(message.enqueuedAt)) / 60
      let bucket = Self.bucketMinutes.firstIndex { minutes <= Double($0) }
      counts[0] += 1
      counts[1 + (bucket ?? Self.bucketMinutes.count)] += 1
    }
    return counts
  }

  /// The qshape(1)-style table: a header of bucket bounds in minutes, a `TOTAL` row, and one
  /// row per area; columns right-aligned, six characters wide.
  var ages: String {
    func row(_ name: String, _ cells: [String]) -> String {
      let padded = cells.map { String(repeating: " ", count: max(1, 6 - $0.count)) + $0 }
      return name + String(repeating: " ", count: max(0, 8 - name.count)) + padded.joined()
    }
    let header = ["T"] + Self.bucketMinutes.map(String.init) + ["1280+"]
    var lines = [row("", header), row("TOTAL", ageCounts(nil).map(String.init))]
    for area in Self.areas {
      lines.append(row(area.name, ageCounts(area.state).map(String.init)))
    }
    return lines.joined(separator: "\n") + "\n"
  }
}
