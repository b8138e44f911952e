import AppGroupMailbox
import Foundation
import Glibc

/// `mailboxctl create`: creates a mailbox with the settings it will keep.
let createCommand = Subcommand(
  name: "create",
  summary: "Create a mailbox with its settings (bounds, overflow policy, sharing mode).",
  options: MailboxOptions.location + MailboxOptions.settings + [MailboxOptions.json],
  details: """
    The settings are stored in the mailbox (its settings file, docs/FORMAT.md) and every
    producer and consumer follows them; no other command needs them again. 'mailboxctl
    config' shows and changes them. Prints the settings stored. Exit status 73 when the
    mailbox already exists (nothing is changed), or with --group-shared when the namespace
    directory exists and is not group-shared (setgid and group-writable: a mailbox keeps its
    directory's modes). A namespace directory that holds only a spool
    of the old format (AppGroupMailbox on Apple platforms) gets the mailbox beside it: run
    'mailboxctl migrate' next to convert it under these settings.
    """,
  run: { arguments in
    let location = try MailboxOptions.location(arguments)
    let wanted = try MailboxOptions.settings(arguments, over: AppGroupMailboxSettings())
    if MailboxOptions.hasMailbox(location) {
      throw CommandFailure(
        .cannotCreate,
        "a mailbox already exists at \(location.directory.path); 'mailboxctl config' shows "
          + "and changes its settings")
    }
    // An existing namespace directory keeps its modes (an old spool's, or one made by hand): a
    // group-shared mailbox needs it group-shared already, or it would be made private for good.
    var info = stat()
    if wanted.permissions == .groupShared, lstat(location.directory.path, &info) == 0,
      info.st_mode & S_IFMT == S_IFDIR, info.st_mode & S_ISGID == 0 || info.st_mode & S_IWGRP == 0
    {
      throw CommandFailure(
        .cannotCreate,
        "--group-shared: \(location.directory.path) exists and is not group-shared (mode "
          + "\(String(info.st_mode & 0o7777, radix: 8))), and a mailbox keeps its directory's "
          + "modes: make it so first (chgrp GROUP DIR; chmod 2770 DIR), then run create again; "
          + "nothing was created")
    }
    let containerExisted = FileManager.default.fileExists(atPath: location.container.path)
    let mailbox: AppGroupRawMailbox
    do {
      mailbox = try AppGroupRawMailbox(
        containerURL: location.container, namespace: location.namespace,
        limits: wanted.limits(claimTimeout: 600), overflowPolicy: wanted.overflowPolicy,
        permissions: wanted.permissions)
    } catch {
      throw MailboxOptions.openFailure(error, location)
    }
    let stored = mailbox.settings
    // Compares the settings asked for (not the largest payload limit ever stored, a record the
    // mailbox keeps itself).
    if !stored.differences(from: wanted).isEmpty {
      throw CommandFailure(
        .cannotCreate,
        "another process created the mailbox at \(location.directory.path) first, with other "
          + "settings; 'mailboxctl config' shows them")
    }
    if let note = MailboxOptions.sharingNote(
      location, sharing: stored.permissions, containerExisted: containerExisted)
    {
      Output.note("create: " + note)
    }
    try printSettings(stored, location, json: arguments.flag("--json"))
    if MailboxOptions.legacyFiles(location) > 0 {
      Output.note(
        "note: \(location.directory.path) holds files of the old format: convert them with "
          + "'mailboxctl migrate\(MailboxOptions.locationArguments(arguments))'")
    }
    return .success
  }
)

/// `mailboxctl config`: shows or changes a mailbox's stored settings.
let configCommand = Subcommand(
  name: "config",
  summary: "Show a mailbox's stored settings, or change them for every process.",
  options: MailboxOptions.location + MailboxOptions.settingChanges + [MailboxOptions.json],
  details: """
    Without options, prints the settings (read only: works on a read-only file system and
    for a user who may only read). With options, changes those settings atomically under
    the lock every enqueue takes for the depth bound; producers and consumers already
    running follow the new values from their next operation. Lowering --max-payload-bytes
    never makes a stored message unreadable (consumers read up to the largest limit the
    mailbox ever had). Lowering another bound deletes nothing by itself, but what the
    mailbox holds then meets it, and config says so on stderr: messages older than a
    shorter lifetime are deleted undelivered by the next claim or maintain; a quarantine
    over a lower --max-quarantined-files loses its oldest files at the next quarantine or
    maintain; with discard-oldest, the next enqueue deletes pending messages until the
    depth is under a lower --max-messages (with reject-newest, enqueues are refused until
    then; choosing discard-oldest for a mailbox over its bound is said the same way);
    messages already delivered as often as a lower --max-delivery-attempts become dead
    letters at their next claim. The sharing mode is fixed at creation (--group-shared
    is refused here).
    """,
  run: { arguments in
    if arguments.flag("--group-shared") {
      throw CommandFailure(
        .usage, "the sharing mode is fixed when the mailbox is created (mailboxctl create)")
    }
    let changes = MailboxOptions.givenSettings(arguments)
    let json = arguments.flag("--json")
    if changes.isEmpty {
      let (inspector, location) = try MailboxOptions.openForReading(
        arguments, unconverted: true)
      try printSettings(inspector.settings, location, json: json)
      return .success
    }
    let location = try MailboxOptions.location(arguments)
    guard MailboxOptions.exists(location) else {
      throw MailboxOptions.missing(location, arguments)
    }
    let mailbox: AppGroupRawMailbox
    do {
      mailbox = try AppGroupRawMailbox(
        containerURL: location.container, namespace: location.namespace)
    } catch {
      throw MailboxOptions.openFailure(error, location)
    }
    let updated: AppGroupMailboxSettings
    var before: AppGroupMailboxSettings?
    do {
      updated = try mailbox.updateSettings { settings in
        before = settings
        settings = try MailboxOptions.settings(arguments, over: settings)
      }
    } catch let error as UsageError {
      throw CommandFailure(.usage, error.message)
    } catch {
      // Settings replaced since the open (a newer format, or no longer a regular file).
      throw MailboxOptions.unusableSettings(
        error, location, while: "cannot change the mailbox at \(location.directory.path)")
        ?? CommandFailure(error, while: "config")
    }
    try printSettings(updated, location, json: json)
    if let before {
      for note in SettingsConsequences.notes(mailbox, before: before, after: updated) {
        Output.note("config: " + note)
      }
    }
    return .success
  }
)

/// Prints `settings` as `name: value` rows, or one JSON object.
private func printSettings(
  _ settings: AppGroupMailboxSettings, _ location: MailboxOptions.Location, json: Bool
) throws(CommandFailure) {
  let overflow = settings.overflowPolicy == .rejectNewest ? "reject-newest" : "discard-oldest"
  let sharing = settings.permissions == .private ? "private" : "group-shared"
  if json {
    var object = JSONObject()
    object.add("namespace", location.namespace)
    object.add("maxMessages", settings.maxMessages)
    object.add("maxPayloadBytes", settings.maxPayloadBytes)
    object.add(
      "messageLifetime",
      rawJSON: Data(Output.seconds(settings.messageLifetime, decimals: 6).utf8))
    object.add("maxQuarantinedFiles", settings.maxQuarantinedFiles)
    object.add("maxDeliveryAttempts", settings.maxDeliveryAttempts)
    object.add("overflow", overflow)
    object.add("sharing", sharing)
    object.add("held", settings.isHeld)
    try Output.data(object.text + "\n")
    return
  }
  let rows = [
    ("namespace", location.namespace),
    ("max messages", String(settings.maxMessages)),
    ("max payload bytes", String(settings.maxPayloadBytes)),
    ("message lifetime", Output.seconds(settings.messageLifetime, decimals: 6) + " s"),
    ("max quarantined", String(settings.maxQuarantinedFiles)),
    ("max deliveries", settings.maxDeliveryAttempts.map(String.init) ?? "unlimited"),
    ("overflow", overflow),
    ("sharing", sharing),
    ("held", settings.isHeld ? "yes" : "no"),
  ]
  try Output.data(
    rows.map { $0.0 + ":" + String(repeating: " ", count: 18 - $0.0.count) + $0.1 + "\n" }
      .joined())
}
