import AppGroupMailbox
import Foundation

/// `mailboxctl quarantine list | show | requeue | purge`.
let quarantineCommand = Subcommand(
  spec: CommandSpec(
    name: "quarantine",
    summary: "List, show, requeue or purge quarantined files.",
    positionalUsage: "list | show ID | requeue ID... | purge ID...", minPositionals: 1,
    maxPositionals: Int.max,
    options: MailboxOptions.writing([
      .flag("--all", "requeue/purge: every quarantined file."),
      .flag("--message", "show: also print the encoded message."),
      MailboxOptions.json,
    ]),
    details: """
      ID is a message id (every quarantined file with that id) or a quarantine file name (the
      only way to name a file whose id is unknown).
      requeue puts a readable message back in pending at priority 5 (quarantine names keep no
      level) and the position of its enqueue date, with its delivery count reset; a file that
      is not a readable message stays (exit 65), as does a message past its lifetime (exit 65:
      a claim would delete it; raise --message-lifetime with config first), and an id already
      pending or claimed. A full mailbox stops requeue (exit 75) whatever the overflow policy:
      it never deletes a pending message to make room. purge deletes files; one it cannot delete
      is reported (outcome failed, exit 74) and the rest are still deleted. list and show only
      read: they work on a read-only file system and for a user who may only read the mailbox.
      Exit status: 66 when an ID matches nothing, 65 when a file is not a message or expired,
      75 when the mailbox is full.
      """),
  run: { arguments in try runQuarantine(arguments) })

private func runQuarantine(_ arguments: ParsedArguments) throws -> ExitStatus {
  let action = arguments.positionals[0]
  let selectors = Array(arguments.positionals.dropFirst())
  let json = arguments.flag("--json")
  switch action {
  case "list", "show":
    guard selectors.count == (action == "show" ? 1 : 0) else {
      throw UsageError(
        message: action == "show" ? "quarantine show needs one ID" : "quarantine list takes no ID")
    }
  case "requeue", "purge":
    guard arguments.flag("--all") != !selectors.isEmpty else {
      throw UsageError(message: "quarantine \(action) needs IDs or --all (not both)")
    }
  default:
    throw UsageError(message: "unknown quarantine action '\(action)' (list, show, requeue, purge)")
  }
  let inspector =
    action == "list" || action == "show"
    ? try MailboxOptions.openForReading(arguments).0
    : try MailboxOptions.open(arguments, mustExist: true).0.inspector
  let entries: [AppGroupMailboxEntry]
  do {
    entries = try inspector.entries(in: [.quarantined])
  } catch {
    throw CommandFailure(error, while: "")
  }
  switch action {
  case "list":
    if json {
      try Output.data(entries.map { EntryFormat.object($0).text + "\n" }.joined())
    } else {
      var lines = [
        "QUARANTINED AT               REASON      ID                                    SIZE  FILE"
      ]
      for entry in entries {
        let date = entry.quarantinedAt.map(ISO8601.format) ?? "-"
        let reason = entry.quarantineReason ?? "-"
        let id = entry.id?.uuidString.lowercased() ?? "unknown"
        lines.append(
          EntryFormat.pad(date, 29) + EntryFormat.pad(reason, 12) + EntryFormat.pad(id, 38)
            + EntryFormat.pad(String(entry.size), 6) + Output.shown(entry.fileName, limit: 300))
      }
      try Output.data(lines.joined(separator: "\n") + "\n")
    }
    return .success
  case "show":
    guard let name = resolve(selectors[0], in: entries).first else {
      throw unmatched(selectors[0])
    }
    let envelope: AppGroupMailboxEnvelope?
    do {
      envelope = try inspector.envelope(name, includeMessage: arguments.flag("--message"))
    } catch {
      throw CommandFailure(error, while: "quarantine show")
    }
    guard let envelope else { throw CommandFailure(.noInput, "no such quarantined file: \(name)") }
    try EntryFormat.printEnvelope(envelope, json: json)
    return .success
  default:
    var names: [String] = []
    if arguments.flag("--all") {
      names = entries.map(\.fileName)
    } else {
      for selector in selectors {
        let found = resolve(selector, in: entries)
        guard !found.isEmpty else {
          throw unmatched(selector)
        }
        names += found
      }
    }
    // Each name once: two names that are not UTF-8 can list alike (U+FFFD), and one purge of
    // that spelling removes both (a second said "notFound" and exited 66). Compared as bytes:
    // canonically equivalent names (NFC and NFD) are different files.
    var seen = Set<[UInt8]>()
    names = names.filter { seen.insert(Array($0.utf8)).inserted }
    // The id each file's name carries, for the outcome lines (nil: "unknown" in the name).
    let ids = Dictionary(
      entries.compactMap { entry in entry.id.map { (entry.fileName, $0) } },
      uniquingKeysWith: { first, _ in first })
    return try action == "purge"
      ? purge(names, inspector, ids: ids, json: json)
      : requeue(names, inspector, ids: ids, json: json)
  }
}

/// The quarantine file names `selector` names: the file itself, or every file of that id.
/// Exit 66 for a selector that names no quarantined file; for `unknown`, the id column's word
/// for a file whose id could not be read, how to name such a file.
private func unmatched(_ selector: String) -> CommandFailure {
  CommandFailure(
    .noInput,
    "no such quarantined file: \(selector)"
      + (selector == "unknown"
        ? " (a file whose id is unknown is named by its file name, the FILE column of "
          + "'mailboxctl quarantine list')" : ""))
}

private func resolve(_ selector: String, in entries: [AppGroupMailboxEntry]) -> [String] {
  if let id = UUID(uuidString: selector) {
    return entries.filter { $0.id == id }.map(\.fileName)
  }
  return entries.contains { $0.fileName == selector } ? [selector] : []
}

private func report(_ name: String, _ id: UUID?, _ outcome: String, json: Bool)
  throws(CommandFailure)
{
  if json {
    var object = JSONObject()
    object.add("fileName", name)
    object.add("id", id?.uuidString.lowercased())
    object.add("outcome", outcome)
    try Output.data(object.text + "\n")
  } else {
    try Output.data("\(outcome) \(name)\n")
  }
}

private func requeue(
  _ names: [String], _ inspector: AppGroupMailboxInspector, ids: [String: UUID], json: Bool
) throws -> ExitStatus {
  try forEachName(names, "requeue", inspector.requeueQuarantined) { name, outcome, status in
    switch outcome {
    case .requeued(let id): try report(name, id, "requeued", json: json)
    case .alreadyPresent(let id):
      try report(name, id, "alreadyPresent", json: json)
      Output.note(
        "quarantine: message \(id.uuidString.lowercased()) is already pending, delayed or claimed")
    case .expired(let id):
      try report(name, id, "expired", json: json)
      Output.note(
        "quarantine: \(name) stays in quarantine: its enqueue date is the message lifetime or "
          + "more ago, so a claim would delete it; raise the lifetime first ('mailboxctl config "
          + "--message-lifetime'), or purge it")
      status = .dataError
    case .notFound:
      try report(name, ids[name], "notFound", json: json)
      status = .noInput
    case .notAMessage:
      try report(name, ids[name], "notAMessage", json: json)
      Output.note(
        "quarantine: \(name) stays in quarantine: it is not a message this mailbox can deliver "
          + "(not a regular file, hard-linked, malformed, a newer format, larger than the payload "
          + "limit, or not one JSON value); "
          + "'quarantine show' tells which, 'mailboxctl config --max-payload-bytes' raises the "
          + "limit")
      status = .dataError
    }
  }
}

private func purge(
  _ names: [String], _ inspector: AppGroupMailboxInspector, ids: [String: UUID], json: Bool
) throws -> ExitStatus {
  // A file that cannot be deleted (chattr +i, another user's directory) does not keep the
  // others: each is tried, and the failure is reported with its file.
  try forEachName(
    names, "purge", inspector.purgeQuarantined,
    failed: { name in try report(name, ids[name], "failed", json: json) }
  ) { name, removed, status in
    try report(name, ids[name], removed ? "purged" : "notFound", json: json)
    if !removed { status = .noInput }
  }
}

/// Runs `operation` on each quarantined file name in turn and hands its result to `outcome`,
/// which may lower the exit status. An error thrown by `operation` names the verb and the
/// file: without `failed` it stops the loop; with it, it is printed, `failed` reports the
/// file, the rest are tried, and the exit status is the first such error's.
private func forEachName<Result>(
  _ names: [String], _ verb: String, _ operation: (String) throws -> Result,
  failed: ((String) throws -> Void)? = nil,
  outcome: (String, Result, inout ExitStatus) throws -> Void
) throws -> ExitStatus {
  var status = ExitStatus.success
  var firstFailure: ExitStatus?
  for (index, name) in names.enumerated() {
    let result: Result
    do {
      result = try operation(name)
    } catch {
      var failure = CommandFailure(error, while: "\(verb) \(name)")
      // Only a failure of that file (an I/O error naming it) lets the others be tried.
      if let failed, case .ioFailure? = error as? AppGroupMailboxError {
        Output.error("quarantine: \(name): \(failure.message)")
        try failed(name)
        if firstFailure == nil { firstFailure = failure.status }
        continue
      }
      if case .mailboxFull = error as? AppGroupMailboxError {
        // Not the enqueue's advice: a requeue never deletes a pending message to make room,
        // whatever the overflow policy.
        failure.message =
          "\(verb) \(name): the mailbox is full (maxMessages): a requeue never deletes a "
          + "pending message to make room, whatever the overflow policy; wait for consumers or "
          + "raise the bound ('mailboxctl config --max-messages')"
      }
      let untried = names.count - index - 1
      if untried > 0 {
        failure.message +=
          untried == 1
          ? "; the file after it was not tried" : "; the \(untried) files after it were not tried"
      }
      throw failure
    }
    try outcome(name, result, &status)
  }
  return firstFailure ?? status
}
