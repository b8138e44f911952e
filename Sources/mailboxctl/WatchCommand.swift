import AppGroupMailbox
import Foundation

/// `mailboxctl watch`: prints a line for each wake-up of the mailbox's watcher.
let watchCommand = Subcommand(
  name: "watch",
  summary: "Print a line for each wake-up (a message made pending or delayed) as it happens.",
  options: MailboxOptions.reading(watchOptions),
  details: """
    Watches pending/ with inotify (the library's watcher; it polls every second when inotify
    is unavailable): a wake-up follows each message made pending by any process (an
    enqueue, a release, a recovered claim, a delayed message made due), each message that
    arrives in delayed/, and with inotify each change of the mailbox's settings ('hold',
    'resume', 'config'). Wake-ups that come
    close together coalesce into one; the first comes at once when messages are already
    pending. watch only looks: it makes nothing pending itself, so a delayed message shows
    up when some other process's operation makes it pending.
    Each line: the time, and the pending, delayed and claimed counts after the wake-up (with
    --json: {"at", "pending", "delayed", "claimed"}). Runs until SIGINT (exit 130), SIGTERM or
    SIGHUP (exit 0), --count or --timeout (exit 0); exit 66 when the mailbox directory is
    removed, moved or replaced (within 10 s when a directory above it, such as the container,
    is renamed).
    """,
  run: { arguments in
    let limits = try FollowLimits(arguments)
    let (inspector, location) = try MailboxOptions.openForReading(arguments)
    let signals = Signals.install()
    // Armed before the note below: whatever is enqueued after it is seen.
    let wakeUps = try MailboxWakeUps(wakeup: signals.wakeup) { try inspector.wakeUps() }
    defer { wakeUps.close() }
    Output.note("watch: waiting for changes in \(location.directory.path)/pending")
    if wakeUps.isPolling { Output.note("watch: inotify is unavailable; checking every second") }
    // A write to a stdout whose reader stopped reading must not outlast --timeout.
    if let deadline = limits.deadline {
      FileDescriptorWriter.interruptBlockedWrites(after: deadline)
    }
    var seen = 0
    while signals.stopSignal == nil {
      if limits.reached(seen) { break }
      guard try wakeUps.take() > 0 else {
        guard let left = limits.secondsLeft else { break }
        signals.wakeup.waitCoalescing(seconds: left)
        continue
      }
      seen += 1
      let status: AppGroupMailboxCounts
      do {
        status = try inspector.counts()
      } catch {
        throw CommandFailure(error, while: "")
      }
      let line: String
      if arguments.flag("--json") {
        var object = JSONObject()
        object.add("at", date: Date())
        object.add("pending", status.pending)
        object.add("delayed", status.delayed)
        object.add("claimed", status.claimed)
        line = object.text + "\n"
      } else {
        line =
          "\(ISO8601.format(Date())) pending \(status.pending) delayed \(status.delayed) "
          + "claimed \(status.claimed)\n"
      }
      // A stop signal or --timeout ends a write to a reader that stopped reading (a full pipe).
      do {
        try Output.data(line, stoppable: true)
      } catch  where signals.stopSignal != nil || FileDescriptorWriter.deadlinePassed {
        break
      }
    }
    return signals.stopSignal != nil ? signals.stoppedStatus : .success
  }
)

private let watchOptions = FollowLimits.options(counting: "wake-ups") + [MailboxOptions.json]
