import AppGroupMailbox
import Foundation

/// `mailboxctl watch`: prints a line each time the pending area changes.
let watchCommand = Subcommand(
  spec: CommandSpec(
    name: "watch",
    summary: "Print a line for each wake-up (a change of the pending area) as it happens.",
    options: MailboxOptions.location + [
      OptionSpec(name: "--count", kind: .value("N"), help: "Exit after N wake-ups."),
      OptionSpec(name: "--timeout", kind: .value("SECONDS"), help: "Exit after SECONDS."),
      MailboxOptions.json,
    ] + MailboxOptions.limits,
    details: """
      Each line: the time, and the pending and claimed counts after the wake-up (with --json:
      {"at", "pending", "claimed"}). Runs until SIGINT (exit 130), SIGTERM (exit 0), --count
      or --timeout (exit 0).
      """),
  run: { arguments in
    let count = try arguments.integer("--count", in: 1...Int.max)
    let timeout = try arguments.seconds("--timeout")
    let (mailbox, location) = try MailboxOptions.open(arguments, mustExist: true)
    let signals = Signals.install()
    let waiter: any WorkWaiter = PollingWorkWaiter(
      mailboxDirectory: location.directory, wakeup: signals.wakeup,
      shouldStop: { [signals] in signals.stopSignal != nil })
    Output.note("watch: waiting for changes in \(location.directory.path)/pending")
    let deadline = timeout.map { Date().addingTimeInterval($0) }
    var seen = 0
    while signals.stopSignal == nil {
      if let count, seen >= count { break }
      let left = deadline.map { $0.timeIntervalSinceNow } ?? 3600
      if left <= 0 { break }
      guard waiter.waitForWork(timeout: left) else { continue }
      seen += 1
      let status: AppGroupMailboxStatus
      do {
        status = try mailbox.inspector.status()
      } catch {
        throw CommandFailure(error, while: "")
      }
      if arguments.flag("--json") {
        var object = JSONObject()
        object.add("at", date: Date())
        object.add("pending", status.pending)
        object.add("claimed", status.claimed)
        try Output.data(object.text + "\n")
      } else {
        try Output.data(
          "\(ISO8601.format(Date())) pending \(status.pending) claimed \(status.claimed)\n")
      }
    }
    return signals.stopSignal != nil ? signals.stoppedStatus : .success
  })
