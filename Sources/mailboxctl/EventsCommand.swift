import AppGroupMailbox
import Foundation
import MailboxLocks

/// `mailboxctl events`: prints the mailbox's lifecycle events as JSON Lines until stopped.
let eventsCommand = Subcommand(
  spec: CommandSpec(
    name: "events",
    summary: "Print lifecycle events (enqueued, claimed, ...) as JSON Lines as they happen.",
    options: MailboxOptions.location + FollowLimits.options(counting: "events (lines)") + [
      .flag("--json", "Accepted and changes nothing: events always prints JSON Lines.")
    ],
    details: """
      Follows the mailbox's areas with inotify and prints one JSON object per line for each
      change any process makes from the moment it starts: {"event", "id", "at",
      "deliveryCount", "reason", "dueAt"}. "event" is enqueued, delayed, promoted, claimed,
      renewed, released, putBack, recovered, acknowledged, expired, removed, quarantined,
      deadLettered, requeued or overflowed (events were lost: the kernel's queue overflowed).
      "id" is the message's id (null for overflowed and for a quarantined file without one),
      "at" when this process saw the change, "deliveryCount" the count the message's name
      carries, "reason" the quarantine reason (quarantined and deadLettered), "dueAt" the due
      time of a message moved to delayed/. Never message contents. --json, as the other
      commands take it, is accepted and changes nothing. Events are derived from
      names alone; mailboxctl(1) and docs/WAKEUPS.md say what cannot be told apart.
      Runs until SIGINT, SIGTERM or SIGHUP, --count lines or --timeout (exit 0); exit 66 when
      the mailbox directory is missing or removed, 69 when it cannot be opened, 74 when inotify
      is unavailable.
      """),
  run: { arguments in
    let limits = try FollowLimits(arguments)
    let (inspector, location) = try MailboxOptions.openForReading(arguments)
    let signals = Signals.install()
    let events: AppGroupMailboxEvents
    do {
      events = try inspector.events()
    } catch {
      throw CommandFailure(error, while: "")
    }
    defer { events.close() }
    // Armed: whatever happens after this note is printed.
    Output.note("events: following \(location.directory.path)")
    let ended = Locked<(done: Bool, failure: CommandFailure?)>((false, nil))
    let task = Task { [signals] in
      do {
        var printed = 0
        for try await event in events {
          try Output.data(EventLine.json(event) + "\n")
          printed += 1
          if limits.reached(printed) { break }
        }
      } catch let failure as CommandFailure {
        ended.withLock { $0.failure = failure }
      } catch {
        ended.withLock { $0.failure = CommandFailure(error, while: "") }
      }
      ended.withLock { $0.done = true }
      signals.wakeup.signal()
    }
    while signals.stopSignal == nil, !ended.withLock({ $0.done }) {
      guard let left = limits.secondsLeft else { break }
      signals.wakeup.waitCoalescing(seconds: left)
    }
    if let failure = ended.withLock({ $0.failure }) { throw failure }
    task.cancel()
    return .success
  })

/// One event as a JSON Lines object (keys always present, null when the event has none).
enum EventLine {
  static func json(_ event: AppGroupMailboxEvent) -> String {
    var object = JSONObject()
    object.add("event", event.kind.rawValue)
    object.add("id", event.id?.uuidString.lowercased())
    object.add("at", date: event.date)
    object.add("deliveryCount", event.deliveryCount)
    object.add("reason", event.quarantineReason)
    object.add("dueAt", date: event.dueAt)
    return object.text
  }
}
