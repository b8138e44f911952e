import AppGroupMailbox
import Foundation

/// `mailboxctl ack TOKEN`: the claimed message was handled; delete it.
let ackCommand = tokenCommand(
  name: "ack", summary: "Acknowledge a claimed message (from 'claim'): it is deleted.",
  options: MailboxOptions.writing([]),
  details: "TOKEN is a claim token printed by 'mailboxctl claim'. The message is deleted."
) { claim, _, _ in
  try claim.acknowledge()
}

/// `mailboxctl release TOKEN`: put a claimed message back, at once or after `--retry-after`.
let releaseCommand = tokenCommand(
  name: "release", summary: "Put a claimed message (from 'claim') back in line.",
  options: MailboxOptions.writing([
    .value("--retry-after", "SECONDS", "Not claimable for SECONDS first: it waits in delayed/.")
  ]),
  details: """
    TOKEN is a claim token printed by 'mailboxctl claim'. The message goes back to its original
    position, first in line if it was the oldest; its delivery count is kept, its lifetime is not
    extended. With --retry-after it waits in delayed/ (still counting toward --max-messages)
    and returns to its original position when due. A --retry-after that ends past the
    message's lifetime (it would expire before it is due) is refused with exit 65 and the
    message stays claimed.
    """
) { claim, arguments, mailbox in
  if let delay = try arguments.seconds("--retry-after") {
    let lifetime = mailbox.limits.messageLifetime
    // Delayed past its lifetime, it would expire unseen: refused, as such an enqueue is.
    if let expiry = claim.expiresAt, Date().addingTimeInterval(delay) >= expiry {
      throw EnqueueChecks.expired(
        dueTooLate: true, lifetime: lifetime, creating: false,
        message: EnqueueChecks.name(claim.id),
        outcome: "it stays claimed (release it with a shorter --retry-after, or without one)")
    }
    try claim.release(retryAfter: delay)
  } else {
    try claim.release()
  }
}

/// `mailboxctl renew TOKEN`: a fresh lease; prints the new deadline.
let renewCommand = tokenCommand(
  name: "renew", summary: "Start a fresh lease on a claimed message (from 'claim').",
  options: MailboxOptions.claiming([MailboxOptions.json]),
  details: """
    TOKEN is a claim token printed by 'mailboxctl claim'; it stays the same. The new lease runs
    --claim-timeout seconds (default 600) from now. Prints the new lease deadline (with --json:
    {"token", "leaseUntil"}).
    """
) { claim, arguments, _ in
  try claim.renew()
  let lease = claim.leaseDeadline.map(ISO8601.format)
  if arguments.flag("--json") {
    var object = JSONObject()
    object.add("token", claim.token.description)
    object.add("leaseUntil", lease)
    try Output.data(object.text + "\n")
  } else {
    try Output.data((lease ?? "-") + "\n")
  }
}

/// How many times a token command looks its claim up when the claimed file was renamed under
/// it by a concurrent use of the same token.
private let tokenTries = 5

/// A subcommand that finds the claim its TOKEN argument names and runs `body` on it; `options`
/// are all it accepts (``MailboxOptions/writing(_:)`` or ``MailboxOptions/claiming(_:)``).
///
/// A TOKEN that is not exactly `<message id>.<16 hex digits>` is a usage error (64) and nothing
/// is opened; a token whose claim is gone (acknowledged, released, or recovered after its lease
/// ran out) exits 66 and changes nothing, in particular not a later claim of the same message.
private func tokenCommand(
  name: String, summary: String, options: [OptionSpec], details: String,
  body:
    @escaping @Sendable (AppGroupRawMailbox.Claim, ParsedArguments, AppGroupRawMailbox) throws
    -> Void
) -> Subcommand {
  Subcommand(
    spec: CommandSpec(
      name: name, summary: summary, positionalUsage: "TOKEN", minPositionals: 1,
      maxPositionals: 1, options: options,
      details: details + """

        Exit status: 0 done, 64 TOKEN is not a claim token, 65 (release) refused as above, 66 no
        such mailbox or the claim no longer exists (acknowledged, released, or recovered after
        its lease ran out; nothing was changed), 74 I/O error.
        """),
    run: { arguments in
      guard let token = AppGroupRawMailbox.ClaimToken(arguments.positionals[0]) else {
        throw CommandFailure(
          .usage,
          "TOKEN is not a claim token (<message id>.<16 hex digits>, as 'mailboxctl claim' "
            + "prints it): '\(Output.shown(arguments.positionals[0], limit: 80))'")
      }
      // Option values are checked before the claim is looked up, so a bad one changes nothing.
      for option in options where option.kind == .value("SECONDS") {
        _ = try arguments.seconds(option.name)
      }
      let (mailbox, _) = try MailboxOptions.open(arguments, mustExist: true)
      do {
        // Another use of the same token (a keep-alive renew beside an ack) may rename the
        // claimed file between the look-up and the act, which then finds it gone: look it up
        // again. Gone for good, the look-up itself says so.
        var tries = 0
        while true {
          do {
            try body(try mailbox.claim(token: token), arguments, mailbox)
            break
          } catch AppGroupMailboxError.claimNoLongerExists where tries < tokenTries - 1 {
            tries += 1
          }
        }
      } catch let failure as CommandFailure {
        throw failure
      } catch let failure as UsageError {
        throw CommandFailure(.usage, failure.message)
      } catch AppGroupMailboxError.claimNoLongerExists {
        throw CommandFailure(
          .noInput,
          "claim \(token) no longer exists: it was acknowledged or released, or its lease ran "
            + "out and it was recovered; nothing was changed")
      } catch AppGroupMailboxError.decodingFailure {
        throw CommandFailure(
          .dataError, "claim \(token): its file no longer holds a readable message")
      } catch {
        throw CommandFailure(error, while: "")
      }
      return .success
    })
}
