@_spi(Testing) import AppGroupMailbox
import Foundation

/// `mailboxctl migrate`: converts a spool of the Apple package AppGroupMailbox (flat
/// `pending-…`, `claimed-…`, `quarantine-…` files) into this format, in place.
let migrateCommand = Subcommand(
  spec: CommandSpec(
    name: "migrate",
    summary: "Convert a spool written by AppGroupMailbox on Apple platforms into this format.",
    options: MailboxOptions.writing([
      .value(
        "--type", "TYPE",
        "The type tag for the imported messages (default none: every consumer accepts them)."),
      MailboxOptions.json,
      OptionSpec(
        name: "--crash-after-mutations", kind: .value("N"),
        help: "Debug builds: end the process after N file-system changes (crash tests).",
        hidden: true),
    ]),
    details: """
      The namespace directory of the Apple package holds every file flat: pending-ORDINAL-ID.json,
      claimed-CLAIM-pending-….json and quarantine-MILLIS-ID.bin, locked with flock on
      .mailbox.lock. migrate holds that lock while it runs and refuses at once (exit 75) while
      another process (one of the old format, or another migrate) holds it, and exits 65 when
      .mailbox.lock is not a regular file with one link (a symlink, a directory): stop those
      processes first (the mailbox of this format is created before, when missing, with the
      default settings, which it names on stderr: choose them with create first, or change them
      with config, all but the sharing mode). Messages are imported oldest first with their ids
      and enqueue dates, so the order is kept; a pending file gets delivery count 0, a claimed one
      1 (it was handed out and not finished). Each old file is deleted after its message is
      written and flushed: a run interrupted at any point and run again neither loses nor
      duplicates a message, and a run with nothing left to convert changes nothing; run it again
      before starting consumers (acknowledged ids leave no trace, so an imported message
      acknowledged before its old file was deleted would come back). Old quarantined files and
      files that are not readable messages (names that are not UTF-8 included) move to quarantine/
      (reason foreign); an old message whose id the mailbox already holds with another payload,
      type tag or date, or only in quarantine/ (a second old file with that id, or a message of
      this format) moves there as it was (reason conflict); only the same message already there
      (an interrupted run wrote it: the same id, payload, type tag and enqueue date, not in
      quarantine/) counts as already present. A message dated before 1970 or after 2286-11-20,
      which this format cannot store, moves to quarantine/ too (reason foreign), its date never
      changed. migrate never deletes an old file whose message it did not write: when quarantine/
      cannot take what it holds and what the run would move there within maxQuarantinedFiles, it
      stops before any change (exit 65, naming mailboxctl config --max-quarantined-files N). The
      mailbox's stored settings apply as to enqueue; when the directory holds no mailbox of this
      format yet, migrate creates it with the default settings: to choose them, run mailboxctl
      create first. A message larger than maxPayloadBytes with this format's header, or more
      messages than maxMessages (whatever the overflow policy: migrate never evicts a message),
      stops the run (exit 65 or 75): raise it with mailboxctl config and run again; an old file
      over 64 MiB stops it before any change (exit 65). Messages keep their enqueue dates: one
      already as old as the mailbox's messageLifetime (default one day) is not imported and its
      old file stays (exit 65, with the lifetime to set: mailboxctl config --message-lifetime
      SECONDS, then run again; or saying none imports it, for one older than the longest, 1e9 s);
      give the lifetime room for the time consumers take, as a message expires once its age
      reaches
      it. Prints the imported, already present, expired (left in place) and quarantined counts
      (JSON: {"imported", "alreadyPresent", "expired", "quarantined"}); with no old file found
      it says so on stderr (exit 0). Until migrate has
      converted every old file, the other commands refuse the directory (exit 69).
      """),
  run: { arguments in
    if let mutations = try arguments.integer("--crash-after-mutations", in: 0...1_000_000) {
      CrashPoint.arm(afterMutations: mutations)
    }
    let hadSettings = MailboxOptions.storesSettings(try MailboxOptions.location(arguments))
    let (mailbox, location) = try MailboxOptions.open(
      arguments, mustExist: true, unconverted: true)
    if !hadSettings {
      // The settings (and the sharing mode, which never changes) were chosen here, not by
      // create: say so, as enqueue does for a mailbox it makes.
      let settings = mailbox.settings
      Output.note(
        "migrate: made the mailbox's settings"
          + (MailboxOptions.givenSettings(arguments).isEmpty ? " with the defaults" : "")
          + " (message lifetime "
          + "\(Output.seconds(settings.messageLifetime)) s, maxMessages \(settings.maxMessages), "
          + (settings.permissions == .groupShared ? "group-shared" : "private")
          + "); 'mailboxctl create' chooses them before migrate, 'mailboxctl config' changes all "
          + "but the sharing mode")
      if let note = MailboxOptions.sharingNote(
        location, sharing: settings.permissions, containerExisted: true)
      {
        Output.note("migrate: " + note)
      }
    }
    let found = MailboxOptions.legacyFiles(location)
    let report: LegacyMigrationReport
    do {
      report = try mailbox.migrateLegacySpool(messageType: arguments.value("--type") ?? "")
    } catch LegacyMigrationError.lockHeld {
      throw CommandFailure(
        .temporaryFailure,
        "another process (one of the old format, or another migrate) holds "
          + "\(location.directory.path)/.mailbox.lock; stop it and run again")
    } catch LegacyMigrationError.unsafeLock {
      throw CommandFailure(
        .dataError, "\(location.directory.path)/.mailbox.lock is not a regular file with one link")
    } catch LegacyMigrationError.quarantineFull(let needed, let held) {
      throw CommandFailure(
        .dataError,
        "\(Output.counted(needed, "old file")) would go to quarantine/, which holds "
          + "\(held) of at most \(mailbox.settings.maxQuarantinedFiles) (maxQuarantinedFiles), "
          + "and migrate never deletes an old file: none was moved; raise the bound, for example "
          + "'mailboxctl config\(MailboxOptions.locationArguments(arguments)) "
          + "--max-quarantined-files \(held + needed)', and run migrate again")
    } catch AppGroupMailboxError.mailboxFull {
      let left = AppGroupRawMailbox.legacySpoolFileCount(in: location.directory)
      // Room for every old file left beside what the mailbox holds now (a lowered bound may be
      // below its depth).
      let held = max((try? mailbox.inspector.counts().depth) ?? 0, mailbox.settings.maxMessages)
      throw CommandFailure(
        .temporaryFailure,
        "the mailbox is full (maxMessages \(mailbox.settings.maxMessages)), and migrate never "
          + "evicts a message, whatever the overflow policy: what was imported stays, "
          + "\(Output.counted(left, "old file")) stay\(left == 1 ? "s" : ""); raise the bound, "
          + "for example 'mailboxctl config\(MailboxOptions.locationArguments(arguments)) "
          + "--max-messages \(held + left)', and run migrate again")
    } catch AppGroupMailboxError.payloadTooLarge(let actual, let maximum) {
      let left = AppGroupRawMailbox.legacySpoolFileCount(in: location.directory)
      // Over the ceiling no bound helps: the file cannot be a message of this format.
      let fix =
        actual > AppGroupMailboxLimits.payloadCeiling
        ? "move it out of \(location.directory.path) (no mailbox takes a message file over "
          + "\(AppGroupMailboxLimits.payloadCeiling) bytes)"
        : "raise the bound, for example 'mailboxctl config"
          + "\(MailboxOptions.locationArguments(arguments)) --max-payload-bytes \(actual)'"
      throw CommandFailure(
        .dataError,
        "an old message would make a message file of \(actual) bytes, over the limit of "
          + "\(maximum) (maxPayloadBytes): what was imported stays, "
          + "\(Output.counted(left, "old file")) stay\(left == 1 ? "s" : ""); \(fix), and run "
          + "migrate again")
    } catch {
      throw CommandFailure(error, while: "")
    }
    let rows: [(key: String, label: String, value: Int)] = [
      ("imported", "imported", report.imported),
      ("alreadyPresent", "already present", report.alreadyPresent),
      ("expired", "expired", report.expired), ("quarantined", "quarantined", report.quarantined),
    ]
    try Output.counts(rows, json: arguments.flag("--json"))
    if found == 0 {
      // A wrong --container or --namespace converts nothing: say where it looked.
      Output.note(
        "migrate: \(location.directory.path) holds no files of the old format (pending-*.json, "
          + "claimed-*.json, quarantine-*.bin): already converted, or the Apple package's spool "
          + "is elsewhere (it is <container>/AppGroupMailbox/<namespace>)")
    }
    if let oldest = report.oldestExpired {
      throw expiredFailure(
        report.expired, oldest: oldest, lifetime: mailbox.settings.messageLifetime,
        location: MailboxOptions.locationArguments(arguments))
    }
    return .success
  })

/// The failure (``ExitStatus/dataError``, 65) for `count` messages not imported because their
/// enqueue dates, the oldest `oldest`, are already `lifetime` seconds old; it names a lifetime
/// that imports them with a day to spare, rounded up to whole days, when --message-lifetime
/// (at most 1e9 s) can give one; otherwise it says that none it takes imports the oldest.
private func expiredFailure(_ count: Int, oldest: Date, lifetime: Double, location: String)
  -> CommandFailure
{
  let age = max(Date().timeIntervalSince(oldest), 0)
  let days = (age / 86_400).rounded(.up) + 1
  let stated =
    "\(count) message\(count == 1 ? " is" : "s are") older than the mailbox's message lifetime "
    + "(\(Output.seconds(lifetime)) s) and would expire at once: not imported, "
    + "\(count == 1 ? "its old file stays" : "their old files stay")"
  guard days <= 11_574 else {
    return CommandFailure(
      .dataError,
      stated + "; the oldest is \(Int(age)) s old, older than the longest lifetime "
        + "mailboxctl config sets (1000000000 s), so no --message-lifetime imports it")
  }
  return CommandFailure(
    .dataError,
    stated + "; raise the lifetime (the oldest is \(Int(age)) s old), for example "
      + "'mailboxctl config\(location) --message-lifetime \(Int(days) * 86_400)', and run "
      + "migrate again")
}
