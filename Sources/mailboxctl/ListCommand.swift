import AppGroupMailbox
import Foundation

/// `mailboxctl list`: entries with id, state, enqueue time, size and delivery count.
let listCommand = Subcommand(
  spec: CommandSpec(
    name: "list",
    summary: "List messages: id, state, enqueue time, size, deliveries, due time (no contents).",
    options: MailboxOptions.around([
      OptionSpec(
        name: "--state", kind: .value("STATE"),
        help: "pending, claimed, delayed or quarantined (repeatable).",
        repeatable: true),
      .value("--limit", "N", "Print at most N entries."),
      MailboxOptions.json,
    ]),
    details: """
      Pending and claimed oldest first, then delayed by due time, then quarantined by
      quarantine time. DUE AT is when a delayed message becomes claimable ("-" for the
      others); for a message enqueued with a delay, ENQUEUED AT shows its place in line (its
      due time) and `show` the enqueue time. JSON: {"id", "state", "enqueuedAt", "size",
      "deliveryCount", "fileName"}, plus "leaseExpiresAt" when claimed, "dueAt" when delayed,
      "quarantinedAt" and "reason" when quarantined.
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
