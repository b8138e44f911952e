import AppGroupMailbox
import Foundation
import Glibc
import Synchronization

/// The options every mailbox subcommand shares: where the mailbox is, the settings a new
/// mailbox stores (`create`, `config`), and the per-process choices (claim timeout, flushes).
enum MailboxOptions {
  static let location: [OptionSpec] = [
    .value("--container", "DIR", "The container directory."),
    .value(
      "--app-group", "ID",
      "The app group whose container to use ($APP_GROUP_CONTAINER_ROOT/ID, else "
        + "$XDG_DATA_HOME/app-groups/ID, else ~/.local/share/app-groups/ID)."),
    .value(
      "--namespace", "NS",
      "The mailbox namespace (1-64 of A-Z a-z 0-9 . _ -, not starting with '-', not only "
        + "dots); default 'default'."),
  ]

  /// The options of a command that claims messages (`claim`, `drain`, `renew`):
  /// ``location``, the command's own options, ``claimTimeout`` and ``relaxed``, then the
  /// settings options, hidden (accepted for one more release; they apply only when the command
  /// creates the mailbox, with a note).
  static func claiming(_ own: [OptionSpec]) -> [OptionSpec] {
    location + own + [claimTimeout, relaxed] + hidden(settings)
  }

  /// The options of a command that writes to one mailbox but takes no claim of its own
  /// (`enqueue`, `ack`, `release`, `cancel`, `maintain`, `quarantine`, `migrate`):
  /// ``location``, the command's own options and ``relaxed``; ``claimTimeout`` and the
  /// settings options are accepted but hidden. There a claim timeout only changes how often the
  /// library's opportunistic sweeps look (claims of other processes keep the lease they were
  /// taken with), so the help does not offer it.
  static func writing(_ own: [OptionSpec]) -> [OptionSpec] {
    location + own + [relaxed] + hidden([claimTimeout] + settings)
  }

  /// This process's claim lease.
  static let claimTimeout = OptionSpec.value(
    "--claim-timeout", "SECONDS",
    "Lease of this command's claims before recovery (default 600, at most 31622400).")

  /// This process's flushes.
  static let relaxed = OptionSpec.flag(
    "--relaxed", "Skip flushes (survives crashes, not power loss).")

  /// The options of a command that only reads one mailbox: ``location``, the command's own
  /// options, then, hidden, the write-side ``claimTimeout``, ``relaxed`` and settings options (accepted and
  /// ignored, so one set of flags in a script still works for every command).
  static func reading(_ own: [OptionSpec]) -> [OptionSpec] {
    location + own + hidden([claimTimeout, relaxed] + settings)
  }

  /// `options`, accepted but left out of the help.
  static func hidden(_ options: [OptionSpec]) -> [OptionSpec] {
    options.map { option in
      var hidden = option
      hidden.hidden = true
      return hidden
    }
  }

  static let json = OptionSpec.flag("--json", "Print JSON (JSON Lines for lists).")

  /// Where a mailbox is: its container and namespace.
  struct Location {
    var container: URL
    var namespace: String
    var directory: URL {
      container.appendingPathComponent("AppGroupMailbox").appendingPathComponent(namespace)
    }
  }

  /// The location options as the user gave them (` --container DIR --namespace NS`), quoted
  /// for a shell where needed, for a command line a message suggests; `namespace`, when given,
  /// stands for the `--namespace` option (`namespaces` names each one it lists).
  /// Without `withNamespace`, the container's options alone (for `mailboxctl namespaces`).
  static func locationArguments(
    _ arguments: ParsedArguments, namespace: String? = nil, withNamespace: Bool = true
  ) -> String {
    var text = ""
    for option in ["--container", "--app-group"] + (withNamespace ? ["--namespace"] : []) {
      let given =
        option == "--namespace" ? namespace ?? arguments.value(option) : arguments.value(option)
      guard let value = given else { continue }
      let plain = value.allSatisfy { $0.isLetter || $0.isNumber || "/._-:@+=,".contains($0) }
      text +=
        " \(option) "
        + (plain ? value : "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'")
    }
    return text
  }

  static func location(_ arguments: ParsedArguments) throws(CommandFailure) -> Location {
    let namespace = arguments.value("--namespace") ?? "default"
    guard AppGroupMailboxNamespace.isValid(namespace) else {
      throw CommandFailure(
        .usage,
        "invalid namespace '\(namespace)': use 1 to 64 of A-Z a-z 0-9 . _ -, not starting "
          + "with '-' and not all dots")
    }
    switch (arguments.value("--container"), arguments.value("--app-group")) {
    case (let directory?, nil):
      return Location(container: URL(fileURLWithPath: directory), namespace: namespace)
    case (nil, let group?):
      guard AppGroupContainer.isValid(group) else {
        throw CommandFailure(
          .usage,
          "invalid app group identifier '\(group)': use 1 to 255 of A-Z a-z 0-9 . _ -, not "
            + "starting with '.'")
      }
      do {
        return Location(
          container: try AppGroupContainer.url(forIdentifier: group), namespace: namespace)
      } catch {
        throw CommandFailure(
          .usage,
          "no container root for app group '\(group)': set APP_GROUP_CONTAINER_ROOT, "
            + "XDG_DATA_HOME or HOME, or give --container DIR")
      }
    case (nil, nil):
      throw CommandFailure(.usage, "give --container DIR or --app-group ID")
    case (_?, _?):
      throw CommandFailure(.usage, "give --container or --app-group, not both")
    }
  }

  /// Whether the namespace directory exists (as a directory, not a link).
  static func exists(_ location: Location) -> Bool {
    var info = stat()
    return lstat(location.directory.path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
  }

  /// Whether the namespace directory holds a mailbox of this format, made or being made: its
  /// `state` or `settings` file exists (a directory holding only a spool of the old format
  /// holds none).
  static func hasMailbox(_ location: Location) -> Bool {
    var info = stat()
    return ["state", "settings"].contains {
      lstat(location.directory.appendingPathComponent($0).path, &info) == 0
    }
  }

  /// Whether the mailbox stores its settings (its `settings` file exists): an opener's settings
  /// options then do not apply.
  static func storesSettings(_ location: Location) -> Bool {
    var info = stat()
    return lstat(location.directory.appendingPathComponent("settings").path, &info) == 0
  }

  /// The number of files of the old format (a spool of the Apple package, which `migrate`
  /// converts) in the namespace directory.
  static func legacyFiles(_ location: Location) -> Int {
    AppGroupRawMailbox.legacySpoolFileCount(in: location.directory)
  }

  /// Opens the mailbox the arguments name for reading only: nothing is created, opened for
  /// writing or given another mode (a read-only file system, a user who may only read). A
  /// namespace directory that does not exist is ``ExitStatus/noInput`` (66), one that cannot
  /// be reached ``ExitStatus/unavailable`` (69; see ``missing(_:)``); one that holds files of
  /// the old format is ``unconverted(_:_:files:)`` (69) unless `unconverted` allows it and a
  /// mailbox of this format is there too.
  static func openForReading(_ arguments: ParsedArguments, unconverted: Bool = false) throws
    -> (AppGroupMailboxInspector, Location)
  {
    let location = try location(arguments)
    return (try openForReading(location, arguments, unconverted: unconverted), location)
  }

  /// ``openForReading(_:unconverted:)`` for the mailbox at `location` (`namespaces` opens each
  /// namespace of a container).
  static func openForReading(
    _ location: Location, _ arguments: ParsedArguments, unconverted: Bool = false
  ) throws -> AppGroupMailboxInspector {
    _ = try limits(arguments)
    guard exists(location) else { throw missing(location, arguments) }
    if !unconverted || !hasMailbox(location) { try refuseUnconverted(location, arguments) }
    noteIgnoredSettings(arguments, creating: false)
    do {
      return try AppGroupMailboxInspector(
        containerURL: location.container, namespace: location.namespace)
    } catch {
      throw openFailure(error, location)
    }
  }

  /// Opens the mailbox the arguments name for reading and writing, creating it when missing
  /// (with the settings options given, else the defaults). With `mustExist`, a namespace
  /// directory that does not exist is ``ExitStatus/noInput`` (66), one that cannot be reached
  /// ``ExitStatus/unavailable`` (69; see ``missing(_:)``), and nothing is created. A namespace
  /// directory that holds files of the old format is ``unconverted(_:_:files:)`` (69) and
  /// nothing is created, unless `unconverted` (`migrate`). An existing mailbox keeps its
  /// stored settings and modes; the settings options apply when it stores none yet.
  static func open(
    _ arguments: ParsedArguments, mustExist: Bool, unconverted: Bool = false,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil
  ) throws -> (AppGroupRawMailbox, Location) {
    let location = try location(arguments)
    let limits = try limits(arguments)
    let overflow = try overflow(arguments)
    let existed = exists(location)
    if mustExist, !existed { throw missing(location, arguments) }
    if existed, !unconverted { try refuseUnconverted(location, arguments) }
    noteIgnoredSettings(arguments, creating: !existed || !storesSettings(location))
    let forward: @Sendable (AppGroupMailboxDiagnostic) -> Void = { event in
      if case .storedSettingsApplied = event { return }
      if event == .unsafeEntryLeftInPlace { noteLeftInPlace(location) }
      diagnostic?(event)
    }
    do {
      let mailbox = try AppGroupRawMailbox(
        containerURL: location.container, namespace: location.namespace, limits: limits,
        overflowPolicy: overflow, diagnostic: forward,
        durability: arguments.flag("--relaxed") ? .relaxed : .full,
        permissions: arguments.flag("--group-shared") ? .groupShared : .private)
      return (mailbox, location)
    } catch {
      throw openFailure(error, location)
    }
  }

  /// Whether ``noteLeftInPlace(_:)`` has spoken in this process.
  private static let leftInPlaceNoted = Atomic<Bool>(false)

  /// Says once a process that the mailbox holds an entry that could be neither moved,
  /// quarantined nor removed (``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace``): delivery
  /// goes on, but the entry needs its owner or root.
  private static func noteLeftInPlace(_ location: Location) {
    guard !leftInPlaceNoted.exchange(true, ordering: .relaxed) else { return }
    Output.note(
      "note: \(location.directory.path) holds an entry that can be neither moved, quarantined "
        + "nor removed (a directory of another user, or a message file made immutable or "
        + "append-only with chattr, or with something mounted on it): it is passed over; its "
        + "owner or root must remove it, its flag or the mount (docs/SECURITY.md, \"Hostile and "
        + "damaged entries\")")
  }

  /// The note for settings options given to a subcommand other than `create` or `config`.
  private static func noteIgnoredSettings(_ arguments: ParsedArguments, creating: Bool) {
    let given = givenSettings(arguments)
    guard !given.isEmpty else { return }
    let names = given.joined(separator: ", ")
    if creating {
      Output.note(
        "note: \(names) only set the settings of a mailbox this command creates; they will be "
          + "removed here in the next release: use 'mailboxctl create'")
    } else {
      // config refuses a change of the sharing mode (fixed at creation).
      let sharing =
        given.contains("--group-shared")
        ? "; the sharing mode (--group-shared) is fixed when the mailbox is created" : ""
      Output.note(
        "note: \(names) ignored: the mailbox's stored settings apply; 'mailboxctl config' "
          + "shows and changes them\(sharing) (these options will be removed here in the next "
          + "release)")
    }
  }

  /// A note on how a mailbox just made is shared, when its users may not be the ones meant, or
  /// nil. `containerExisted` says whether the container was there before the command:
  /// - a private mailbox in a container shared with a group (setgid or group-writable): the
  ///   group's other users cannot open it, and the sharing mode is fixed at creation, so the
  ///   note says how to make it again;
  /// - a group-shared mailbox in a container this command made (its group is then this
  ///   process's own; as root, group `root`): the note names the group and the `chgrp -R` that
  ///   gives the mailbox to another;
  /// - a group-shared mailbox whose group is not its container's (a container without the
  ///   setgid bit: new directories take the creating process's group): the note names both
  ///   groups and how to give the mailbox the container's;
  /// - a group-shared mailbox in a container without the setgid bit whose group is this
  ///   process's own: this mailbox has it, but what other users make there takes theirs.
  ///
  /// Silent for the set-up the docs describe: a setgid container of the group, made first.
  static func sharingNote(
    _ location: Location, sharing: AppGroupMailboxPermissions, containerExisted: Bool
  ) -> String? {
    var container = stat()
    guard stat(location.container.path, &container) == 0 else { return nil }
    switch sharing {
    case .private:
      guard container.st_mode & S_ISGID != 0 || container.st_mode & S_IWGRP != 0 else {
        return nil
      }
      return "the new mailbox \(location.directory.path) is private (only its owner may use it), "
        + "though its container is shared with a group; for the group, remove it (rm -r "
        + "\(location.directory.path)) and make it with 'mailboxctl create --group-shared'"
    case .groupShared:
      var mailbox = stat()
      guard stat(location.directory.path, &mailbox) == 0 else { return nil }
      let group = groupName(mailbox.st_gid)
      if !containerExisted {
        return "made the container \(location.container.path) too, with this process's own "
          + "group, \(group): only its members may use the mailbox; to share it with another "
          + "group, 'chgrp -R GROUP \(location.container.path)'"
      }
      if mailbox.st_gid == container.st_gid {
        guard container.st_mode & S_ISGID == 0 else { return nil }
        return "the container \(location.container.path) is not setgid: the new mailbox has "
          + "its group, \(group), but what other users make there takes their own group; "
          + "'chmod g+s \(location.container.path)' makes it take \(group)"
      }
      return "the new mailbox \(location.directory.path) has group \(group), this process's "
        + "own, not its container's, \(groupName(container.st_gid)): the container is not "
        + "setgid; give it the container's group with 'chgrp -R "
        + "\(groupName(container.st_gid, quoted: false)) "
        + "\(location.directory.deletingLastPathComponent().path)' (and 'chmod g+s "
        + "\(location.container.path)' for what is made there next)"
    }
  }

  /// The name of group `id` (quoted), or its number when it has none.
  private static func groupName(_ id: gid_t, quoted: Bool = true) -> String {
    guard let entry = getgrgid(id) else { return String(id) }
    let name = String(cString: entry.pointee.gr_name)
    return quoted ? "'\(name)'" : name
  }

  /// Opens an existing mailbox (``open(_:mustExist:unconverted:diagnostic:)``) for a command
  /// whose claims may remove messages instead of delivering them (`drain`, `claim`): each dead
  /// letter is reported as it happens (``DeadLetterReport``, its lines prefixed with
  /// `command`; a handler's own dead letters are told to it, ``DeadLetterReport/handlerChose(_:)``),
  /// and the returned counter counts what was quarantined or expired.
  /// - Throws: ``CommandFailure`` as ``open(_:mustExist:unconverted:diagnostic:)``.
  static func openReportingRemovals(_ arguments: ParsedArguments, command: String) throws -> (
    AppGroupRawMailbox, Location, QuarantineCounter, DeadLetterReport
  ) {
    let removed = QuarantineCounter()
    let deadLetters = DeadLetterReport(try location(arguments), command: command)
    let (mailbox, location) = try open(
      arguments, mustExist: true,
      diagnostic: {
        removed.record($0)
        deadLetters.record($0)
      })
    return (mailbox, location, removed, deadLetters)
  }
}
