import AppGroupMailbox
import Foundation
import Glibc

/// `mailboxctl enqueue`: adds one message (stdin or `--data`) or one per line (`--lines`).
let enqueueCommand = Subcommand(
  spec: CommandSpec(
    name: "enqueue",
    summary: "Add a message (JSON from stdin or --data), or one per line with --lines.",
    options: MailboxOptions.writing(
      [
        .value("--data", "JSON", "The message JSON (else stdin)."),
        .flag("--lines", "Read JSON Lines: one message a line (blank lines skipped)."),
        .value(
          "--id", "UUID",
          "The message id; nothing is written while it is pending, delayed, claimed or quarantined."
        ),
        .value(
          "--enqueued-at", "DATE",
          "Order by this ISO 8601 date (2026-01-31T12:00:00Z) instead of now."),
        .value(
          "--delay", "SECONDS",
          "Not claimable for SECONDS: it waits in delayed/, then joins the line."),
        .value(
          "--not-before", "DATE", "Not claimable before this ISO 8601 date (a past date: at once)."),
        .value("--type", "TYPE", "The message type tag (default none: every consumer accepts it)."),
        .value(
          "--payload-version", "N",
          "The version of the message's encoded form, 1 (default) to 2147483647."),
        .value(
          "--priority", "N",
          "Priority level 0 to 9 (default 5): higher levels are claimed first, FIFO within one."),
        .value(
          "--wait", "SECONDS",
          "When full, wait up to SECONDS per message for room (default: fail at once)."),
        MailboxOptions.json,
        .flag(
          "--dry-run",
          "Check the options, the input and the mailbox's settings; write nothing (see below)."),
        .flag(
          "--no-create", "Refuse a mailbox that does not exist (exit 66) instead of making it."),
      ] + EnqueueKey.options),
    details: """
      Prints each message id on its own line (with --json: {"id", "duplicate", "notBefore"} a
      line; notBefore is null unless the message waits in delayed/). A missing mailbox is
      created with the default settings (`create` chooses them) once the input passed the
      checks below; once messages went into it, stderr says so. With --no-create it is not
      (nor one whose state and settings files are gone): the enqueue exits 66.
      Input: a UTF-8 byte order mark at the start (with --lines: of a line) and the CR of CR LF
      line ends are dropped, and each message is trimmed of whitespace: only the JSON value is
      stored. Unreadable stdin (closed, a directory) exits 66, nothing written.
      Every message is checked first: text that is not UTF-8 JSON, empty input, more than one
      value without --lines, nesting deeper than 512, or a message over the mailbox's
      maxPayloadBytes is rejected with the reason and its line number (exit 65) and nothing is
      written.
      Exit status 0 means every message was stored. A full mailbox (75, naming the depth and
      the bound) or a failed write to the mailbox or stdout (74) stops the command; with
      --lines it then says how many were stored and the first line not stored: every line
      before it is stored, none from it on, so `tail -n +LINE file | mailboxctl enqueue
      --lines` resumes without loss or repeats. With --wait, a message that finds the mailbox
      full waits for room (woken when a message is acknowledged, deleted as expired, discarded,
      quarantined or cancelled) up to SECONDS, so with --lines the whole input goes in as
      consumers make room. A message past its lifetime keeps its place until a consumer's claim
      or `maintain` deletes it. With the discard-oldest overflow policy, each message deleted to
      make room is noted on stderr.
      --delay and --not-before (one of them) hold the message back: it is not pending until
      then, but counts toward the depth bound; when due it joins the line at its due time. With
      --lines every message gets the same due time. A due time past the mailbox's message
      lifetime (from the enqueue time) is rejected (exit 65): the message would expire first;
      so is an --enqueued-at date already older than that lifetime. Dates for
      --enqueued-at and --not-before range from 1970-01-01T00:00:00Z to
      2286-11-20T17:46:39.999999Z; others are refused (exit 64).
      --priority N (0 to 9, default 5; others exit 64) gives every message that level:
      consumers claim the highest level first and FIFO within a level; a release, a retry
      delay, the recovery of an abandoned claim and a delay keep it. A level other than 5 is
      stored in the file name, which consumers built before priority levels quarantine as
      foreign: upgrade them first (docs/FORMAT.md, "Priority levels").
      --payload-version N (1 to 2147483647, default 1; others exit 64) records the version of
      the message's encoded form: a typed Swift consumer decodes it only when that is its own
      payload version or one it has a migration from, and otherwise leaves it pending for a
      consumer that does (docs/FORMAT.md, "Payload versions"). `show`, `claim --json` and
      `drain` report it.
      --dry-run makes every check above (the options, the input, the due times and dates
      against the message lifetime, the sizes against maxPayloadBytes: of the mailbox, or the
      defaults when it does not exist) and exits as the enqueue would (0, 64, 65 or 66; 69 or
      74 for a mailbox this user may not read or enqueue into), saying on stderr how many messages
      would be enqueued; it only reads (it makes and repairs nothing), and does not check for
      room (a full mailbox can empty before the real enqueue) or whether a missing mailbox could
      be made.
      """ + "\n" + EnqueueKey.details),
  run: { arguments in try runEnqueue(arguments) })

private func runEnqueue(_ arguments: ParsedArguments) throws -> ExitStatus {
  let id = try arguments.value("--id").map { text throws(CommandFailure) -> UUID in
    guard let id = UUID(uuidString: text) else {
      throw CommandFailure(.usage, "--id needs a UUID, not '\(text)'")
    }
    return id
  }
  let date = try arguments.value("--enqueued-at").map { text throws(CommandFailure) -> Date in
    guard let date = ISO8601.parse(text) else {
      throw CommandFailure(.usage, "--enqueued-at needs an ISO 8601 date, not '\(text)'")
    }
    try representable(date, "--enqueued-at", text)
    return date
  }
  let notBefore = try notBeforeDate(arguments)
  let wait = try arguments.seconds("--wait") ?? 0
  let type = arguments.value("--type") ?? ""
  let payloadVersion =
    try arguments.integer("--payload-version", in: 1...AppGroupMailboxPayloadVersions.maximum)
    ?? 1
  let priority =
    try arguments.integer("--priority", in: AppGroupMailboxPriority.levels)
    ?? AppGroupMailboxPriority.default
  let lines = arguments.flag("--lines")
  let input: EnqueueInput
  if let data = arguments.value("--data") {
    input = EnqueueInput(Array(data.utf8), lines: lines)
  } else {
    // Typed at a terminal, nothing says when the input ends: said here, so the wait is not
    // taken for a hang.
    if isatty(0) == 1 {
      Output.note(
        "enqueue: reading the message\(lines ? "s, one a line," : "") from the terminal; end "
          + "with Ctrl-D on a line of its own (--data gives one on the command line)")
    }
    input = EnqueueInput(
      try EnqueueInput.readStandardInput(
        limit: lines ? nil : EnqueueInput.singleMessageInputLimit),
      lines: lines)
  }
  let keyed = try EnqueueKey.request(arguments)
  for (option, given) in [("--id", id != nil), ("--key", keyed != nil)]
  where given && input.messages.count > 1 {
    throw CommandFailure(
      .usage, "\(option) applies to one message, but the input has \(input.messages.count)")
  }
  // Every check of the input against a mailbox's limits, before anything is written.
  func check(_ limits: AppGroupMailboxLimits, creating: Bool) throws {
    try EnqueueChecks.expiry(
      notBefore, date: date, id: id, lifetime: limits.messageLifetime, creating: creating)
    for message in input.messages {
      try EnqueueChecks.message(
        input, message, lines: lines, limits: limits, id: id, type: type,
        payloadVersion: payloadVersion, key: keyed?.0)
    }
  }
  let named = try MailboxOptions.location(arguments)
  let existed = MailboxOptions.hasMailbox(named)
  let containerExisted = FileManager.default.fileExists(atPath: named.container.path)
  // --no-create: no mailbox is made, nor one whose state and settings files are gone (a
  // namespace directory being deleted) made again.
  if arguments.flag("--no-create"), !existed {
    guard MailboxOptions.exists(named) else { throw MailboxOptions.missing(named, arguments) }
    throw CommandFailure(
      .noInput,
      "no such mailbox: \(named.directory.path) holds neither a state nor a settings file "
        + "(being deleted, or never made: 'mailboxctl create' makes it)")
  }
  // Input refused before the mailbox is made leaves no empty mailbox behind: checked against
  // the limits it would be made with (and again once open when those differ: another process
  // may make it first, with its own).
  let assumed = existed ? nil : try MailboxOptions.limits(arguments)
  if let assumed {
    try check(assumed, creating: true)
    // Nothing to store (--lines with only blank lines): no mailbox is made for it.
    if input.messages.isEmpty { return .success }
  }
  if arguments.flag("--dry-run") {
    if !existed, !MailboxOptions.exists(named) {
      let settings = MailboxOptions.givenSettings(arguments).isEmpty ? "default" : "given"
      return dryRunPassed(input.messages.count, into: "a new mailbox with the \(settings) settings")
    }
    // Read only: the stored settings, or for a mailbox storing none the ones it would take.
    let (inspector, _) = try MailboxOptions.openForReading(arguments)
    let limits =
      MailboxOptions.storesSettings(named)
      ? inspector.settings.limits(claimTimeout: try arguments.seconds("--claim-timeout") ?? 600)
      : try MailboxOptions.limits(arguments)
    if limits != assumed { try check(limits, creating: !existed) }
    try requireWritable(named, delayed: notBefore != nil)
    return dryRunPassed(input.messages.count, into: "the mailbox")
  }
  // discard-oldest deletes a message to make room: say so, as the library's diagnostic does.
  let (mailbox, location) = try MailboxOptions.open(
    arguments, mustExist: arguments.flag("--no-create"),
    diagnostic: { event in
      if event == .oldestMessageDiscarded {
        Output.note(
          "enqueue: the mailbox was full: its oldest pending message of the lowest level was "
            + "deleted to make room (overflow discard-oldest)")
      }
    })
  // A misspelt --namespace or --container makes a new mailbox: never silently once messages
  // went into it (also before a --lines import's error, which names where to resume).
  func noteCreated() {
    guard !existed else { return }
    if MailboxOptions.givenSettings(arguments).isEmpty {
      Output.note(
        "enqueue: created the mailbox \(location.directory.path) with the default settings "
          + "('mailboxctl create' chooses them)")
    }
    if let note = MailboxOptions.sharingNote(
      location, sharing: mailbox.settings.permissions, containerExisted: containerExisted)
    {
      Output.note("enqueue: " + note)
    }
  }
  if mailbox.limits != assumed { try check(mailbox.limits, creating: false) }
  // The exit status says whether every message was stored: 0 yes, even when printing an id
  // failed after its message was stored; otherwise the error says how far --lines got.
  if let (key, policy) = keyed, let message = input.messages.first {
    do {
      try EnqueueKey.run(
        mailbox, input.payload(message), key: key, policy: policy, type: type,
        payloadVersion: payloadVersion, priority: priority, wait: wait,
        json: arguments.flag("--json"))
    } catch AppGroupMailboxError.mailboxFull {
      throw fullFailure(mailbox, waited: wait, lines: false)
    } catch AppGroupMailboxError.payloadTooLarge(let actual, let maximum) {
      throw EnqueueChecks.tooLarge(actual, maximum, place: "", lines: false)
    } catch let failure as CommandFailure {
      throw failure
    } catch AppGroupMailboxError.containerUnavailable(let cause) {
      // `keys/`, opened by the first keyed enqueue, refused as the other areas at open.
      throw MailboxOptions.openFailure(AppGroupMailboxError.containerUnavailable(cause), location)
    } catch {
      throw CommandFailure(error, while: "")
    }
    noteCreated()
    return .success
  }
  var stored = 0
  for message in input.messages {
    let receipt: AppGroupRawMailbox.Receipt
    do {
      let payload = input.payload(message)
      do {
        receipt = try mailbox.waitingForRoom(upTo: wait) {
          if let notBefore {
            return try mailbox.enqueue(
              payload, id: id, enqueuedAt: date, notBefore: notBefore, messageType: type,
              payloadVersion: payloadVersion, priority: priority)
          }
          return try mailbox.enqueue(
            payload, id: id, enqueuedAt: date, messageType: type,
            payloadVersion: payloadVersion, priority: priority)
        }
      } catch AppGroupMailboxError.mailboxFull {
        throw fullFailure(mailbox, waited: wait, lines: lines)
      } catch AppGroupMailboxError.payloadTooLarge(let actual, let maximum) {
        // The limit another process lowered after the check above (the enqueue checks again
        // under the namespace lock).
        throw EnqueueChecks.tooLarge(
          actual, maximum, place: lines ? "line \(message.line): " : "", lines: lines)
      }
      if receipt.expiredBeforeDue {  // by the library's clock, after the check above
        throw EnqueueChecks.expired(
          dueTooLate: notBefore != nil, lifetime: mailbox.limits.messageLifetime,
          creating: !existed,
          message: EnqueueChecks.name(id), outcome: "it was not enqueued")
      }
    } catch {
      let failure = error as? CommandFailure ?? CommandFailure(error, while: "")
      if stored > 0 { noteCreated() }
      throw lines ? progress(failure, input, stored: stored) : failure
    }
    stored += 1
    do {
      try report(receipt, json: arguments.flag("--json"))
    } catch {
      if stored < input.messages.count {
        noteCreated()
        throw progress(error, input, stored: stored)
      }
      let what = lines ? "all \(stored) messages were" : "the message was"
      Output.note("enqueue: \(what) stored, but \(error.message)")
    }
  }
  noteCreated()
  return .success
}

/// Refuses a mailbox this user may not enqueue into, with the exit status the enqueue would
/// give: its `state` file not readable and writable (69, as opening it), or `tmp/`, `pending/`
/// or, for a `delayed` message, `delayed/` not writable (74, as writing there). faccessat(2)
/// with the effective ids; a file missing, which an enqueue makes again, passes.
private func requireWritable(_ location: MailboxOptions.Location, delayed: Bool)
  throws(CommandFailure)
{
  var needs: [(String, Int32, ExitStatus)] = [
    ("state", R_OK | W_OK, .unavailable), ("tmp", W_OK | X_OK, .ioError),
    ("pending", W_OK | X_OK, .ioError),
  ]
  if delayed { needs.append(("delayed", W_OK | X_OK, .ioError)) }
  for (name, mode, status) in needs {
    let path = location.directory.appendingPathComponent(name).path
    guard faccessat(AT_FDCWD, path, mode, AT_EACCESS) != 0 else { continue }
    let cause = Errno.current
    if cause == .noSuchFileOrDirectory { continue }
    throw CommandFailure(
      status,
      "cannot enqueue into the mailbox at \(location.directory.path): \(name): "
        + cause.explanation)
  }
}

/// Says on stderr that `count` messages passed every check of a `--dry-run` and would go
/// `into` the mailbox; the status is success (nothing was written).
private func dryRunPassed(_ count: Int, into: String) -> ExitStatus {
  Output.note(
    "enqueue: dry run: \(Output.counted(count, "message")) would be enqueued into \(into); "
      + "nothing was written")
  return .success
}

/// Prints the receipt of a stored message: its id, or with `json` `{"id", "duplicate",
/// "notBefore"}`.
private func report(_ receipt: AppGroupRawMailbox.Receipt, json: Bool) throws(CommandFailure) {
  let text = receipt.id.uuidString.lowercased()
  if json {
    var object = JSONObject()
    object.add("id", text)
    object.add("duplicate", receipt.wasAlreadyPresent)
    object.add("notBefore", date: receipt.notBefore)
    try Output.data(object.text + "\n")
  } else {
    try Output.data(text + "\n")
    if receipt.wasAlreadyPresent {
      Output.note("enqueue: message \(text) is already present; nothing was written")
    }
  }
}

/// `failure` of a `--lines` import after `stored` messages, with how far it got: the messages
/// before the first one not stored are in the mailbox, that one and every later one are not,
/// so `tail -n +LINE` of the input resumes it without loss or repetition.
private func progress(_ failure: CommandFailure, _ input: EnqueueInput, stored: Int)
  -> CommandFailure
{
  let total = input.messages.count
  let cause = failure.message.hasSuffix(".") ? failure.message.dropLast() : failure.message[...]
  var text = "\(cause); \(stored) of \(total) messages stored"
  if stored > 0 { text += " (input lines 1 to \(input.messages[stored - 1].line))" }
  text += "; the first line not stored is line \(input.messages[stored].line): resume from it"
  return CommandFailure(failure.status, text)
}

/// "Mailbox full", with the depth and the bound and how long it waited; without `lines`, that
/// nothing was enqueued (with `lines`, ``progress(_:_:stored:)`` says how far it got).
private func fullFailure(_ mailbox: AppGroupRawMailbox, waited: Double, lines: Bool)
  -> CommandFailure
{
  // Counted after the refusal, outside the lock: consumers may have made room since.
  let depth = try? mailbox.inspector.counts().depth
  let maximum = mailbox.settings.maxMessages
  var text =
    if let depth, depth < maximum {
      "the mailbox was full (maxMessages \(maximum); room was made since: depth \(depth) now)"
    } else {
      "the mailbox is full (depth \(depth.map(String.init) ?? "unknown"), maxMessages \(maximum))"
    }
  if waited > 0 { text += " after waiting \(Output.seconds(waited)) s" }
  if mailbox.settings.overflowPolicy == .discardOldest {
    text +=
      " (discard-oldest deletes only pending messages of this message's priority level or "
      + "lower, and too few of them were pending that could be deleted)"
  }
  if !lines { text += "; nothing was enqueued" }
  return CommandFailure(.temporaryFailure, text)
}

/// The due time of `--delay SECONDS` (from now) or `--not-before DATE`; nil when neither is
/// given.
/// - Throws: ``CommandFailure`` (usage) when both are given or a value is invalid.
private func notBeforeDate(_ arguments: ParsedArguments) throws -> Date? {
  switch (arguments.value("--delay"), arguments.value("--not-before")) {
  case (nil, nil):
    return nil
  case (_?, _?):
    throw CommandFailure(.usage, "give --delay or --not-before, not both")
  case (_?, nil):
    return Date().addingTimeInterval(try arguments.seconds("--delay") ?? 0)
  case (nil, let text?):
    guard let date = ISO8601.parse(text) else {
      throw CommandFailure(.usage, "--not-before needs an ISO 8601 date, not '\(text)'")
    }
    try representable(date, "--not-before", text)
    return date
  }
}

/// Refuses (usage, exit 64) a date the name format cannot hold, naming the accepted range.
private func representable(_ date: Date, _ option: String, _ text: String) throws(CommandFailure) {
  guard AppGroupRawMailbox.representableDates.contains(date) else {
    throw CommandFailure(
      .usage,
      "\(option) needs a date from 1970-01-01T00:00:00Z to 2286-11-20T17:46:39.999999Z, "
        + "not '\(text)'; nothing was enqueued")
  }
}
