import AppGroupMailbox
import Foundation
import Glibc

/// Why a mailbox the options name cannot be opened, as one line with its exit status: not
/// there, unreachable, still in the old format, or refused by the library.
extension MailboxOptions {
  /// The failure (``ExitStatus/unavailable``, 69) of a command other than `migrate`, `create`
  /// and `config` on a namespace directory that still holds files of the old format: this
  /// format would not see their messages, so nothing is opened or created beside them.
  /// Without a mailbox there yet, it says that `create` first chooses the settings `migrate`
  /// would otherwise make the defaults.
  static func unconverted(_ location: Location, _ arguments: ParsedArguments, files: Int)
    -> CommandFailure
  {
    let place = locationArguments(arguments, namespace: location.namespace)
    let create =
      hasMailbox(location)
      ? ""
      : " (before it, 'mailboxctl create\(place)' with the settings the mailbox should have, "
        + "such as a --message-lifetime longer than the oldest message's age; otherwise it gets "
        + "the defaults)"
    return CommandFailure(
      .unavailable,
      "\(location.directory.path) holds \(Output.counted(files, "file")) of the old format "
        + "(AppGroupMailbox on Apple platforms) that this command would not see: run "
        + "'mailboxctl migrate\(place)' first (see 'mailboxctl migrate --help')\(create)")
  }

  /// Throws ``unconverted(_:_:files:)`` when the namespace directory holds old-format files.
  static func refuseUnconverted(_ location: Location, _ arguments: ParsedArguments)
    throws(CommandFailure)
  {
    let files = legacyFiles(location)
    if files > 0 { throw unconverted(location, arguments, files: files) }
  }

  /// The failure for a mailbox ``exists(_:)`` did not find. Not there is ``ExitStatus/noInput``
  /// (66): the path does not exist (ENOENT), a component of it is a file (ENOTDIR), or it is
  /// not a directory. A symbolic link there (to a mailbox or not) is ``ExitStatus/unavailable``
  /// (69), as opening or creating the mailbox through it is: a namespace directory is never
  /// opened through a link (docs/SECURITY.md). For ENOENT it says whether the container itself
  /// is missing (a mistyped `--container`) or only the namespace. Any other lstat(2) failure
  /// means the mailbox may well be there but cannot be reached, ``ExitStatus/unavailable`` (69)
  /// naming the errno, as opening it would be: for example EACCES for a user who may not search a directory on the way, ELOOP, ENAMETOOLONG.
  static func missing(_ location: Location, _ arguments: ParsedArguments) -> CommandFailure {
    let path = location.directory.path
    var info = stat()
    if lstat(path, &info) == 0 {
      if info.st_mode & S_IFMT == S_IFLNK {
        return CommandFailure(
          .unavailable,
          "cannot open the mailbox at \(path): it is a symbolic link, and a namespace directory "
            + "is never opened through one (docs/SECURITY.md)")
      }
      return CommandFailure(.noInput, "no such mailbox: \(path) is not a directory")
    }
    let cause = Errno.current
    switch cause {
    case .noSuchFileOrDirectory:
      var containerInfo = stat()
      if lstat(location.container.path, &containerInfo) != 0,
        Errno.current == .noSuchFileOrDirectory
      {
        return CommandFailure(
          .noInput,
          "no such mailbox: \(path) (there is no container at \(location.container.path); "
            + "'mailboxctl create' makes it with the mailbox)")
      }
      // A misspelt name is the usual cause: say where to see the names there.
      let container = locationArguments(arguments, withNamespace: false)
      return CommandFailure(
        .noInput,
        "no such mailbox: \(path) ('mailboxctl namespaces\(container)' lists the mailboxes "
          + "there; 'mailboxctl create' makes one)")
    case .notDirectory:
      // Name what stands in the way (a container that is a file), as an open does.
      let found = unusableDirectory(location).map { " (\($0))" } ?? ""
      return CommandFailure(
        .noInput, "no such mailbox: \(path): lstat failed: \(cause.explanation)\(found)")
    case .permissionDenied:
      return CommandFailure(
        .unavailable,
        "cannot open the mailbox at \(path): lstat failed: \(cause.explanation) "
          + permissionHint)
    default:
      return CommandFailure(
        .unavailable, "cannot open the mailbox at \(path): lstat failed: \(cause.explanation)")
    }
  }

  /// What an EACCES on the way to a mailbox usually means, for the end of its error line.
  static let permissionHint =
    "(this user may not search a directory on the way; for a group-shared container, join "
    + "its group, 'usermod -aG GROUP USER', then log in again)"

  /// What an EACCES inside the namespace directory (its state file, an area) usually means,
  /// for a command that changes the mailbox or one that only looks.
  static let entryPermissionHint =
    "(the mailbox's files do not let this user do that; for a group-shared mailbox, join its "
    + "group, 'usermod -aG GROUP USER', then log in again)"

  /// The failure for an error opening the mailbox at `location`, naming its cause.
  static func openFailure(_ error: any Error, _ location: Location) -> CommandFailure {
    let path = location.directory.path
    switch error as? AppGroupMailboxError {
    case .containerUnavailable(let cause)?:
      if let found = unusableEntry(cause, in: path) ?? unusableDirectory(location) {
        return CommandFailure(
          .unavailable,
          "cannot open the mailbox at \(path): \(found), which a mailbox refuses "
            + "(docs/SECURITY.md; \(cause.failure))")
      }
      return CommandFailure(
        .unavailable,
        "cannot open the mailbox at \(path): \(cause.failure) (a directory is a symlink or not "
          + "a directory, the state file is not a regular file with one link, or an area is on "
          + "another mount)")
    case .ioFailure(let cause)?:
      var hint = ""
      if Errno(rawValue: cause.errno) == .permissionDenied {
        // On the way to the namespace, or (a reader's open for writing) on what is in it.
        hint = " " + (cause.entry == nil ? permissionHint : entryPermissionHint)
      }
      return CommandFailure(
        Errno(rawValue: cause.errno) == .noSuchFileOrDirectory ? .noInput : .unavailable,
        "cannot open the mailbox at \(path): \(cause.failure)\(hint)")
    default:
      if let failure = unusableSettings(
        error, location, while: "cannot open the mailbox at \(path)")
      {
        return failure
      }
      return CommandFailure(error, while: "open")
    }
  }

  /// The failure (``ExitStatus/unavailable``, 69) for settings the library could not use, at
  /// open or when a command re-reads them (`config`, `hold`, `resume`): a newer format, or a
  /// file that is not readable settings (with how to recover); nil for any other error.
  /// `context` starts the message.
  static func unusableSettings(_ error: any Error, _ location: Location, while context: String)
    -> CommandFailure?
  {
    let path = location.directory.path
    switch error as? AppGroupMailboxError {
    case .invalidLimit(let name)? where name.hasPrefix("settings format "):
      return CommandFailure(
        .unavailable,
        "\(context): its settings file has \(name.dropFirst("settings ".count)), newer than "
          + "this mailboxctl reads (formats 1 to \(AppGroupMailboxSettings.newestFormat)); use "
          + "the version that wrote it")
    case .invalidLimit(let name)? where name.hasPrefix("settings would be larger than "):
      return CommandFailure(
        .unavailable,
        "\(context): with the members this mailboxctl does not know (a newer version wrote "
          + "them; they are kept), the changed settings file would be larger than "
          + "\(name.dropFirst("settings would be larger than ".count)), which no reader reads; "
          + "nothing was changed (make the change with the version that wrote them)")
    case .invalidLimit(let name)? where name.hasPrefix("settings: "):
      return CommandFailure(
        .unavailable,
        "\(context): its settings file cannot be used: " + name.dropFirst("settings: ".count)
          + "; to recover, move \(path)/settings away (the mailbox then has the default "
          + "settings, and no hold; its messages stay readable) and set yours again with "
          + "'mailboxctl config' (and 'hold')")
    default:
      return nil
    }
  }

  /// What stands in the namespace directory at `path` where the area or file a refused open
  /// names (`cause.entry`) belongs, as one phrase: "PATH/state is a FIFO, not a regular file
  /// with one link". One lstat(2) of the entry, after the library refused it; nil when the
  /// cause names no area or state file of the namespace or the entry cannot be looked at.
  static func unusableEntry(_ cause: AppGroupMailboxError.IOFailure, in path: String) -> String? {
    // The settings file's refusals are unusableSettings's.
    guard let name = cause.entry, name != "settings" else { return nil }
    let entry = path + "/" + name
    var info = stat()
    guard lstat(entry, &info) == 0 else { return nil }
    if Errno(rawValue: cause.errno) == .improperLink {
      return "\(entry) is on another mount or device than the namespace directory (a "
        + "filesystem, a bind mount or a btrfs subvolume)"
    }
    let wanted = name == "state" ? "a regular file with one link" : "a directory"
    let kind = kind(info)
    guard kind != wanted, !(name == "state" && kind == "a regular file") else { return nil }
    return "\(entry) is \(kind), not \(wanted)"
  }

  /// The directory on the way to the mailbox at `location` that is not one, as one phrase:
  /// "CONTAINER is a regular file, not a directory". The container may be a symbolic link to
  /// a directory (it is followed); the mailboxes directory and the namespace directory may not
  /// (docs/SECURITY.md). lstat(2) (and stat(2) of a linked container) after the library
  /// refused the open; nil when each is a directory or cannot be looked at.
  static func unusableDirectory(_ location: Location) -> String? {
    let namespace = location.directory.path
    let mailboxes = location.directory.deletingLastPathComponent().path
    for (path, followed) in [
      (location.container.path, true), (mailboxes, false), (namespace, false),
    ] {
      var info = stat()
      guard lstat(path, &info) == 0 else { return nil }
      if followed, info.st_mode & S_IFMT == S_IFLNK, stat(path, &info) != 0 { return nil }
      if info.st_mode & S_IFMT != S_IFDIR {
        return "\(path) is \(kind(info)), not a directory"
      }
    }
    return nil
  }

  /// What kind of entry `info` (from lstat(2)) describes, as a phrase: "a FIFO", "a file with 2
  /// links".
  private static func kind(_ info: stat) -> String {
    switch info.st_mode & S_IFMT {
    case S_IFLNK: "a symbolic link"
    case S_IFIFO: "a FIFO"
    case S_IFSOCK: "a socket"
    case S_IFCHR, S_IFBLK: "a device"
    case S_IFDIR: "a directory"
    case S_IFREG: info.st_nlink == 1 ? "a regular file" : "a file with \(info.st_nlink) links"
    default: "an entry of unknown type"
    }
  }
}
