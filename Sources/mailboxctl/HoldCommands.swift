import AppGroupMailbox
import Foundation

/// `mailboxctl hold`: holds delivery from a mailbox for every process, as `postsuper -h` does.
let holdCommand = Subcommand(
  spec: CommandSpec(
    name: "hold",
    summary: "Hold delivery: claims return nothing and drains wait until 'resume'.",
    options: MailboxOptions.location,
    details: """
      Stores the hold in the mailbox's settings file (docs/FORMAT.md), atomically under the
      lock 'config' takes, so it applies to every process and user of the mailbox and
      survives restarts. From their next claim, consumers get nothing: 'claim' prints
      nothing, 'drain' stops as if the mailbox were empty and 'drain --follow' sleeps until
      'mailboxctl resume' wakes it. Producers go on enqueueing. Claims already taken may
      still be acknowledged, released and renewed; a claim already under way when the hold is
      stored (one 'claim --limit N' call, one batch) finishes its batch. 'status' shows the
      hold. Prints
      '<namespace>: held' (or 'already held'). Needs write access to the mailbox: a user
      who may only read gets exit status 69 naming the cause.
      """),
  run: { arguments in try setHold(true, arguments) })

/// `mailboxctl resume`: ends a hold.
let resumeCommand = Subcommand(
  spec: CommandSpec(
    name: "resume",
    summary: "End a hold: claims deliver again and waiting drains wake up.",
    options: MailboxOptions.location,
    details: """
      Clears the hold 'mailboxctl hold' stored, atomically under the lock 'config' takes;
      every 'drain --follow' of the mailbox wakes up and claims again. Prints
      '<namespace>: resumed' (or 'not held'). Needs write access to the mailbox.
      """),
  run: { arguments in try setHold(false, arguments) })

/// Stores `held` in the mailbox the arguments name and prints what changed.
private func setHold(_ held: Bool, _ arguments: ParsedArguments) throws -> ExitStatus {
  let (mailbox, location) = try MailboxOptions.open(arguments, mustExist: true)
  // Whether this call changed the hold, decided under the lock: of two holds at once, one
  // prints "held" and the other "already held" (both printed "held" when it was read first).
  let changed: Bool
  do {
    changed = try mailbox.setHold(held)
  } catch {
    let verb = held ? "hold" : "resume"
    // Settings replaced since the open (a newer format, or no longer a regular file).
    throw MailboxOptions.unusableSettings(
      error, location, while: "cannot change the mailbox at \(location.directory.path)")
      ?? CommandFailure(error, while: verb)
  }
  let outcome =
    held ? (changed ? "held" : "already held") : (changed ? "resumed" : "not held")
  try Output.data("\(location.namespace): \(outcome)\n")
  return .success
}
