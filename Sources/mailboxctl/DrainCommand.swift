import AppGroupMailbox
import Foundation
import Glibc

/// `mailboxctl drain`: claims pending messages in claim order (the highest priority level first,
/// oldest first within a level) and delivers each one: as JSON Lines on stdout, appended to a
/// file (`--output`), to a program per message (`--exec`) or to a long-running handler
/// (`--coprocess`). See ``Drainer``.
let drainCommand = Subcommand(
  name: "drain",
  summary: "Deliver pending messages by priority, oldest first: to stdout, a file, or a handler.",
  options: MailboxOptions.claiming(drainOptions),
  details: drainDetails,
  run: { arguments in try makeDrainer(arguments).run() }
)

private let drainOptions: [OptionSpec] =
  [
    .value("--limit", "N", "Deliver at most N messages (one put back unhandled does not count)."),
    .value(
      "--timeout", "SECONDS",
      "Stop claiming after SECONDS; running handlers finish (a line stdout's reader has not "
        + "taken within --shutdown-timeout more is put back, exit 74)."),
    .value(
      "--handler-timeout", "SECONDS",
      "Stop a handler that takes longer than SECONDS for one message, counted from when its "
        + "input has the message (SIGTERM to its process group, then SIGKILL 5 s later); "
        + "release the message."),
    .value(
      "--jobs", "N", "Up to N messages in flight at once (default 1, which keeps FIFO order)."),
    .flag("--follow", "When empty, wait for more until SIGINT, SIGTERM or SIGHUP (or --timeout)."),
    .value(
      "--shutdown-timeout", "SECONDS",
      "After SIGINT/SIGTERM/SIGHUP or a handler that cannot start, let running handlers finish "
        + "this long (default 30)."),
    .value(
      "--retry-delay", "SECONDS",
      "Delay before the 2nd delivery of a failed message; doubles each time (default 1)."),
    .value(
      "--retry-max-delay", "SECONDS",
      "The longest retry delay (default 300, or --retry-delay when that is larger)."),
    .value(
      "--retry-jitter", "FRACTION",
      "Spread each retry delay by up to +/- FRACTION of itself, 0 to 1 (default 0.1), "
        + "never above --retry-max-delay."),
    .flag("--json", "Print the summary on stderr as JSON."),
    .value(
      "--output", "FILE",
      "Append the JSON lines to FILE (a regular file) and fsync it before acknowledging."),
    .rest(
      "--exec", "CMD [ARG...]",
      "Run CMD once per message, message JSON and a newline on stdin; must come last."),
    .rest(
      "--coprocess", "CMD [ARG...]",
      "Start CMD once and hand it every message (docs/HANDLER-PROTOCOL.md); must come last."),
  ] + MailboxOptions.hidden([.value("--greeting-timeout", "SECONDS", "For tests (default 30).")])

let drainDetails = """
  Without --exec, --coprocess or --output each message is printed as one JSON object a line:
  {"id", "enqueuedAt", "deliveryCount", "messageType", "payloadVersion", "priority",
  "message"}; it is acknowledged once the line is written.
  A line written to stdout is handed off: a pipe or terminal cannot tell whether its reader
  used it, so a reader that stops early (head -n 1) loses what it did not read. For
  at-least-once to the end, use --output FILE (appended, fsynced, then acknowledged), a
  handler, or mailboxctl claim/ack. A line not written whole (a full disk, a reader that
  closed the pipe mid-line) or an --output batch not flushed is no delivery: those messages
  and the rest of the batch are put back with their delivery count unchanged, and drain exits
  74. Two drains writing into one pipe interleave lines over 4096 bytes (PIPE_BUF, pipe(7)),
  and both acknowledge: give each its own pipe or --output FILE.
  With --exec CMD gets the message JSON (its bytes as enqueued: a pretty-printed message keeps
  its line breaks, so read it whole, not with read) and a newline on stdin (written whole to
  whoever reads it: a process CMD leaves running with its stdin gets the rest after CMD
  exited, until 10 s pass without a byte read or drain is stopped by a signal or an error) and
  MAILBOX_ID, MAILBOX_ENQUEUED_AT, MAILBOX_DELIVERY_COUNT, MAILBOX_MESSAGE_TYPE,
  MAILBOX_PAYLOAD_VERSION, MAILBOX_PRIORITY (0 to 9), MAILBOX_NAMESPACE and MAILBOX_CONTAINER
  in its environment, in a process group of its own. Exit status 0 acknowledges the message as
  soon as CMD exits (whatever it left running), unless drain stopped CMD on its way out (then
  the message goes back whatever CMD exits with); any other status, a signal or a handler
  timeout releases it with a retry delay, once what CMD left in its process group is gone
  (SIGTERM when CMD exits, SIGKILL 5 s later): it waits in delayed/ (not pending, so it
  neither spins nor blocks the messages behind it) and returns to its original position after
  min(--retry-max-delay, --retry-delay x 2^(deliveries - 1)) seconds, +/- jitter, never above
  --retry-max-delay (at the cap, jitter only shortens a delay).
  With --coprocess CMD runs once; messages go to its stdin as JSON lines and it answers on
  stdout, one line per message in any order: ack, release (retry policy), retry after N
  seconds (not counted as a delivery; drain hands out every other pending message before it
  sends that one again), or deadletter. When it exits, crashes, writes garbage or exceeds
  --handler-timeout it is stopped; the answers it wrote until it is gone count, what it left
  unanswered is then released (a message of whose line it read no byte goes back with its
  delivery count unchanged), and it is restarted (backoff 0.1 s, doubling); after 5 ends in a
  row without an answer drain stops with 69, and at once when the first handler ends, or stays
  silent 30 s, before it answers the greeting. After a stop signal drain finishes the line it
  is writing, then closes its stdin; its answers count until it exits. A message is its whole
  line: an answer for one not wholly written is ignored. See docs/HANDLER-PROTOCOL.md and
  python/mailbox_handler.py.
  The mailbox's maxDeliveryAttempts (mailboxctl create/config) quarantines a message that
  keeps failing: when its last allowed delivery fails, at once, without a retry delay.
  Without --follow, drain exits once nothing is pending but messages its handler asked to
  retry in this run; those and delayed messages keep waiting for a later run (the summary says
  how many are delayed, and when the next is due; one retried at once is pending). With
  --follow it waits for wake-ups (inotify) and sleeps until the next due time. SIGHUP is
  handled like SIGTERM.
  A summary goes to stderr at the end (JSON with --json); a progress line too when stderr is a
  terminal.
  Exit status: 0 done (also after SIGTERM or SIGHUP, even when handlers failed before: a
  stopped unit is not a failed one; the summary counts the failures), 130 after SIGINT, 75
  when a handler failed, 64 usage (also an --output that is not a regular file), 66 no such
  mailbox, 69 the mailbox cannot be opened (permission denied...), CMD not found or not
  executable or the coprocess keeps ending, 71 CMD could not be started (handlers already
  running may finish first, within --shutdown-timeout), 74 I/O error (also stdout closed by
  its reader or not read for --shutdown-timeout after --timeout, or the --output file cannot
  be opened or written, or the mailbox's lock still held by another process --shutdown-timeout
  after a stop signal, or at a second one), 76 the coprocess refused the protocol.
  """

/// Builds the drain loop from the command line.
func makeDrainer(_ arguments: ParsedArguments) throws -> Drainer {
  let limit = try arguments.integer("--limit", in: 1...Int.max)
  let timeout = try arguments.seconds("--timeout")
  let handlerTimeout = try arguments.seconds("--handler-timeout")
  let shutdownTimeout = try arguments.seconds("--shutdown-timeout") ?? 30
  let jobs = try arguments.integer("--jobs", in: 1...1024) ?? 1
  let chosen = ["--exec", "--coprocess", "--output"].filter { arguments.values[$0] != nil }
  guard chosen.count <= 1 else {
    throw UsageError(
      message: "give one of --exec, --coprocess and --output, not "
        + chosen.joined(separator: " and "))
  }
  let handler = try ["--exec", "--coprocess"].compactMap { option -> (String, URL, [String])? in
    guard let command = arguments.values[option] else { return nil }
    guard let program = command.first, !program.isEmpty else {
      throw UsageError(message: "\(option) needs a program to run")
    }
    guard let executable = ExecLookup.resolve(program) else {
      throw ExecLookup.failure(program, option: option)
    }
    return (option, executable, Array(command.dropFirst()))
  }.first
  let retryPolicy = try Drainer.retryPolicy(arguments)
  let (mailbox, location, quarantined, deadLetters) = try MailboxOptions.openReportingRemovals(
    arguments, command: "drain")
  if mailbox.isHeld {
    Output.note(
      "drain: the mailbox is held: nothing is claimed until 'mailboxctl resume'"
        + (arguments.flag("--follow") ? "; waiting" : ""))
  }
  let context = DrainContext(
    mailbox: mailbox, location: location, signals: Signals.install(), retryPolicy: retryPolicy,
    handlerTimeout: handlerTimeout, shutdownTimeout: shutdownTimeout, jobs: jobs,
    deadLetters: deadLetters)
  let mode: any DeliveryMode
  switch handler {
  case ("--exec", let executable, let rest)?:
    mode = ExecDelivery(context: context, executable: executable, arguments: rest)
  case (_, let executable, let rest)?:
    mode = CoprocessDelivery(
      context: context, executable: executable, arguments: rest,
      greetingTimeout: try arguments.seconds("--greeting-timeout") ?? 30)
  case nil:
    if let path = arguments.value("--output") {
      mode = try FileDelivery(context: context, path: path)
    } else {
      mode = StdoutDelivery(context: context)
    }
  }
  return Drainer(
    context: context, mode: mode, limit: limit, timeout: timeout,
    follow: arguments.flag("--follow"),
    report: DrainReport(context: context, json: arguments.flag("--json"), quarantined: quarantined))
}

extension Drainer {
  /// The retry policy of `--retry-delay`, `--retry-max-delay` and `--retry-jitter` (multiplier 2).
  static func retryPolicy(_ arguments: ParsedArguments) throws(UsageError)
    -> AppGroupMailboxRetryPolicy
  {
    let base = try arguments.seconds("--retry-delay") ?? 1
    let maximum = try arguments.seconds("--retry-max-delay") ?? max(300, base)
    guard maximum >= base else {
      throw UsageError(
        message: "--retry-max-delay (\(arguments.value("--retry-max-delay") ?? "")) is less than "
          + "--retry-delay (\(arguments.value("--retry-delay") ?? "1, the default"))")
    }
    var jitter = 0.1
    if let text = arguments.value("--retry-jitter") {
      guard let value = ParsedArguments.decimal(text), (0...1).contains(value) else {
        throw UsageError(message: "--retry-jitter needs a fraction from 0 to 1, not '\(text)'")
      }
      jitter = value
    }
    return AppGroupMailboxRetryPolicy(
      baseDelay: base, multiplier: 2, maximumDelay: maximum, jitter: jitter)
  }
}
