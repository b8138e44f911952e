import AppGroupMailbox
import Foundation
import MailboxLocks

/// `mailboxctl maintain`: runs the mailbox's maintenance now.
let maintainCommand = Subcommand(
  spec: CommandSpec(
    name: "maintain",
    summary: "Recover abandoned claims, make due messages pending, remove expired files.",
    options: MailboxOptions.writing([
      MailboxOptions.json,
      .flag("--quiet", "Print only the counts that are not 0 (nothing when nothing was done)."),
    ]),
    details: """
      Also makes delayed messages that are due pending (a timer running this lets a systemd
      .path unit on pending/ see due retries; see docs/systemd/), and trims the quarantine.
      Prints what was done, a line each: claims recovered, delayed made pending, messages
      expired, temporary files removed, files quarantined and quarantined discarded (JSON:
      {"recoveredClaims", "promotedMessages", "expiredMessages", "staleTemporaryFiles",
      "quarantined", "quarantineDiscarded"}); with --quiet only the lines whose count is not 0,
      so a timer that runs it every 30 s logs only what it did (--quiet and --json exclude each
      other). The mailbox's stored settings
      (message lifetime, quarantine bound) decide what counts as expired; a claim counts as
      abandoned when the lease in its name has run out; a temporary file is removed once it is
      more than 15 minutes old (a writer that crashed left it; a live writer renames it within moments).
      """),
  run: { arguments in
    let events = Locked<[AppGroupMailboxDiagnostic]>([])
    let (mailbox, _) = try MailboxOptions.open(
      arguments, mustExist: true, diagnostic: { event in events.withLock { $0.append(event) } })
    let promoted: Int
    do {
      promoted = try mailbox.performMaintenanceCountingPromotions()
    } catch {
      throw CommandFailure(error, while: "")
    }
    let seen = events.withLock { $0 }
    func count(_ event: AppGroupMailboxDiagnostic) -> Int { seen.filter { $0 == event }.count }
    let rows: [(key: String, label: String, value: Int)] = [
      ("recoveredClaims", "claims recovered", count(.abandonedClaimRecovered)),
      ("promotedMessages", "delayed made pending", promoted),
      ("expiredMessages", "messages expired", count(.expiredMessageRemoved)),
      ("staleTemporaryFiles", "temporary files removed", count(.staleTemporaryFileRemoved)),
      (
        "quarantined", "files quarantined",
        count(.malformedMessageQuarantined) + count(.unsafeFileQuarantined)
          + count(.deadLetterQuarantined)
      ),
      ("quarantineDiscarded", "quarantined discarded", count(.quarantinedFileDiscarded)),
    ]
    let json = arguments.flag("--json")
    if json, arguments.flag("--quiet") {
      throw CommandFailure(.usage, "--json and --quiet exclude each other")
    }
    try Output.counts(arguments.flag("--quiet") ? rows.filter { $0.value != 0 } : rows, json: json)
    return .success
  })
