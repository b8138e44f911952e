import AppGroupMailbox
import Foundation

/// `mailboxctl list`: entries with id, state, enqueue time, size and delivery count.
let listCommand = Subcommand(
  spec: CommandSpec(
    name: "list",
    summary:
      "List messages: id, state, enqueue time, size, priority, deliveries, due time (no contents).",
    options: MailboxOptions.reading([
      OptionSpec(
        name: "--state", kind: .value("STATE"),
        help: "pending, claimed, delayed or quarantined (repeatable).",
        repeatable: true),
      .value("--limit", "N", "Print at most N entries."),
      MailboxOptions.json,
    ]),
    details: """
      Pending, then claimed, each in claim order (the highest priority level first, oldest first
      within a level), then delayed by due time, then quarantined by quarantine time. PRI is the
      priority level, 0 to 9 ("-" for quarantined files). DUE AT is when a delayed message becomes
      claimable, or when a claimed message's lease runs out (unless acknowledged, released or
      renewed by then, it is claimable again: recovered), "-" for the others; for a message
      enqueued with a delay, ENQUEUED AT shows its place in line (its due time) and `show` the
      enqueue time; so for a message replaced by key, which keeps the replaced one's place,
      ENQUEUED AT shows that place and `show` the replacement's time. JSON: {"id", "state",
      "enqueuedAt", "size", "deliveryCount", "priority", "fileName"} ("enqueuedAt",
      "deliveryCount" and "priority" null when quarantined; "-" in the table), plus
      "leaseExpiresAt" when claimed, "dueAt" when delayed, "quarantinedAt" and "reason" when
      quarantined.
      """),
  run: { arguments in
    var states = Set<AppGroupMailboxEntry.State>()
    for text in arguments.all("--state") {
      guard let state = AppGroupMailboxEntry.State(rawValue: text) else {
        throw CommandFailure(
          .usage, "--state needs pending, claimed, delayed or quarantined, not '\(text)'")
      }
      states.insert(state)
    }
    if states.isEmpty { states = Set(AppGroupMailboxEntry.State.allCases) }
    let limit = try arguments.integer("--limit", in: 1...Int.max)
    let (inspector, _) = try MailboxOptions.openForReading(arguments)
    var entries: [AppGroupMailboxEntry]
    do {
      entries = try inspector.entries(in: states)
    } catch {
      throw CommandFailure(error, while: "")
    }
    if let limit { entries = Array(entries.prefix(limit)) }
    if arguments.flag("--json") {
      try Output.data(entries.map { EntryFormat.object($0).text + "\n" }.joined())
    } else {
      try Output.data(
        ([EntryFormat.header] + entries.map(EntryFormat.row)).joined(separator: "\n") + "\n")
    }
    return .success
  })
