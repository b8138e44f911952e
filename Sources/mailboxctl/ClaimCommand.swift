import AppGroupMailbox
import Foundation
import Synchronization

/// `mailboxctl claim`: claims pending messages and prints each with its claim token and lease
/// deadline, so a script can handle a message and only then acknowledge it (`ack TOKEN`), put
/// it back (`release TOKEN`) or keep it longer (`renew TOKEN`).
let claimCommand = Subcommand(
  name: "claim",
  summary: "Claim pending messages for a script; print each with its claim token.",
  options: MailboxOptions.claiming(claimOptions),
  details: """
    Claims up to N pending messages, the highest priority level first and oldest first within
    a level (due delayed messages join the line first),
    and prints one line each: TOKEN LEASE-UNTIL ID MESSAGE, separated by single spaces, the
    message JSON last and on one line (so `read -r token lease id message` splits it). Nothing
    pending: no output, exit 0.
    Each message stays claimed until `mailboxctl ack TOKEN` (handled: deleted), `mailboxctl
    release TOKEN` (back in line at its original position; --retry-after SECONDS waits first)
    or until its lease (--claim-timeout, default 600 s) runs out; then any process's
    maintenance gives it to the next consumer and the token no longer works. `mailboxctl
    renew TOKEN` starts a fresh lease. A token is `<message id>.<16 hex digits>` and works
    from any process. Delivery is at least once: a script that dies before `ack` gets the
    message again after the lease.
    When a line cannot be written whole (a closed pipe, a full disk), that message and the
    ones after it are put back without counting the delivery, and the command exits 74.
    SIGINT, SIGTERM or SIGHUP (also while a write waits for a reader) puts back alike the
    messages not printed yet (exit 130 for SIGINT, else 0). One that comes while the claim
    waits for the namespace lock another process holds (a stopped producer) ends the wait and
    the claiming (exit 74 when nothing was claimed yet). The put-back takes that lock once it
    is free, or gives up at a second signal or after 30 s: what it could not put back stays
    claimed until its lease runs out (said on stderr, exit 74).
    What a claim removes instead of delivering is said on stderr: messages past the lifetime
    (deleted), dead letters (a line each, as drain's; with other processes dead-lettering at
    the same time the lines may name theirs too) and files that are no message (moved to
    quarantine).
    Exit status: 0 ok (also when nothing was pending), 66 no such mailbox, 69 it cannot be
    opened (permission denied...), 74 I/O error.
    """,
  run: { arguments in try runClaim(arguments) }
)

private let claimOptions: [OptionSpec] = [
  .value("--limit", "N", "Claim up to N messages (default 1)."),
  .flag(
    "--json",
    "Print JSON Lines: {\"token\", \"leaseUntil\", \"id\", \"enqueuedAt\", "
      + "\"deliveryCount\", \"messageType\", \"payloadVersion\", \"priority\", \"message\"}."),
]

/// Seconds the put-back of claimed messages not printed waits, after a stop signal, for the
/// namespace lock another process holds (drain's default `--shutdown-timeout`).
private let putBackTimeout: TimeInterval = 30

private func runClaim(_ arguments: ParsedArguments) throws -> ExitStatus {
  let limit = try arguments.integer("--limit", in: 1...Int(Int32.max)) ?? 1
  let json = arguments.flag("--json")
  // What the claims remove instead of delivering (expired messages, dead letters, files that
  // are no message) is said on stderr, as drain says it.
  let (mailbox, _, removed, _) = try MailboxOptions.openReportingRemovals(
    arguments, command: "claim")
  if mailbox.isHeld {
    Output.note("claim: the mailbox is held: nothing is claimed until 'mailboxctl resume'")
  }
  // A stop signal must not end the process while it holds claims it has not printed (they
  // would wait out their lease with a delivery counted): it ends the writing instead.
  let signals = Signals.install()
  // A wait for the namespace lock that another process holds for long (stopped, or by hand)
  // ends at the first stop signal while claiming (what was claimed by then is put back below);
  // putting back what was not printed polls a lock that is only busy, and gives up on a second
  // signal or after `putBackTimeout`.
  let claiming = Atomic<Bool>(true)
  let putBackWait = StoppingLockWait(signals: signals, timeout: putBackTimeout)
  LockWait.decide { [signals] in
    guard !claiming.load(ordering: .acquiring) else {
      return signals.stopCount > 0 ? .giveUp : .wait
    }
    return putBackWait.verdict()
  }
  let claims: [AppGroupRawMailbox.Claim]
  do {
    claims = try mailbox.claimPending(limit: limit)
    claiming.store(false, ordering: .releasing)
  } catch {
    throw CommandFailure(error, while: "")
  }
  if removed.expired > 0 {
    Output.note(
      "claim: deleted \(Output.counted(removed.expired, "expired message")) (older than the "
        + "mailbox's message lifetime), never delivered")
  }
  if removed.notMessages > 0 {
    Output.note(
      QuarantineCounter.notMessagesNote(
        "claim", removed.notMessages, kept: mailbox.settings.maxQuarantinedFiles > 0))
  }
  for (index, claim) in claims.enumerated() {
    do {
      try Output.data(ClaimLine.text(claim, json: json) + "\n", stoppable: true)
    } catch {
      // Not handed to anyone (a line cut short is no line): back in line at once, not after
      // the lease, and uncounted, so --max-delivery-attempts counts only lines printed.
      let unwritten = claims[index...]
      let putBack = unwritten.filter { (try? $0.releaseUndelivered()) != nil }.count
      let stranded = unwritten.count - putBack
      let back =
        stranded == 0
        ? "put back, their delivery not counted"
        : "\(putBack) of them put back uncounted, \(stranded) left claimed until the lease "
          + "runs out (the put-back failed; their delivery counted)"
      let what =
        "\(unwritten.count) of \(Output.counted(claims.count, "claimed message")) not printed, "
        + back
      if let name = signals.stopSignalName {
        // Some still claimed is an I/O failure (74), whatever the signal.
        guard stranded > 0 else {
          Output.note("claim: stopped by \(name); \(what)")
          return signals.stoppedStatus
        }
        throw CommandFailure(.ioError, "stopped by \(name); \(what)")
      }
      throw CommandFailure(error.status, "\(error.message); \(what)")
    }
  }
  return signals.stopSignal != nil ? signals.stoppedStatus : .success
}

/// How `claim` and `renew` print a claim.
enum ClaimLine {
  /// `TOKEN LEASE-UNTIL ID MESSAGE`, or with `json` the JSON object; no line break.
  static func text(_ claim: AppGroupRawMailbox.Claim, json: Bool) -> String {
    let token = claim.token.description
    let lease = claim.leaseDeadline
    let id = claim.id.uuidString.lowercased()
    guard json else {
      let message = JSONText.oneLine(claim.payload)
      return [token, lease.map(ISO8601.format) ?? "-", id, message].joined(separator: " ")
    }
    var object = JSONObject()
    object.add("token", token)
    object.add("leaseUntil", date: lease)
    DrainContext.add(claim, to: &object)
    return object.text
  }
}
