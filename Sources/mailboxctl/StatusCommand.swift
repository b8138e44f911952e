import AppGroupMailbox
import Foundation

/// `mailboxctl status`: counts and ages of one namespace.
let statusCommand = Subcommand(
  spec: CommandSpec(
    name: "status",
    summary: "Show counts: pending, delayed, claimed, quarantined, temporary files, ages, bytes.",
    options: MailboxOptions.location + [MailboxOptions.json] + MailboxOptions.limits,
    details: """
      Ages are in seconds: the oldest pending message since its enqueue, the oldest claim
      since it was taken or last renewed. Delayed messages (a not-before time, or released
      with a retry delay) are not pending yet; "next due" is when the first becomes
      claimable. Depth is pending + delayed + claimed, what --max-messages bounds. Read from
      file names and sizes only. JSON: {"namespace", "depth", "pending", "delayed", "claimed",
      "quarantined", "temporaryFiles", "oldestPendingAgeSeconds", "nextDueAt",
      "oldestClaimAgeSeconds", "bytes", "held"}; absent values are null. "held" is true
      while delivery is held ('mailboxctl hold'; claims return nothing until 'resume').
      """),
  run: { arguments in
    let (inspector, location) = try MailboxOptions.openForReading(arguments)
    let status: AppGroupMailboxStatus
    do {
      status = try inspector.status()
    } catch {
      throw CommandFailure(error, while: "")
    }
    let now = Date()
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
      try Output.data(object.text + "\n")
    } else {
      func age(_ seconds: Double?) -> String {
        seconds.map { String(format: "%.1f s", $0) } ?? "-"
      }
      let nextDue = status.nextDueAt.map { due in
        ISO8601.format(due) + " (in "
          + String(format: "%.1f s", max(0, due.timeIntervalSince(now))) + ")"
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
        ("held", inspector.isHeld ? "yes" : "no"),
      ]
      try Output.data(
        rows.map { $0.0 + ":" + String(repeating: " ", count: 17 - $0.0.count) + $0.1 + "\n" }
          .joined())
    }
    return .success
  })
