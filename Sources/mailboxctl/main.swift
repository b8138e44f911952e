// mailboxctl: drain, fill, inspect and repair an AppGroupMailbox from the shell.
// Each subcommand lives in its own file as a `Subcommand`; see docs/mailboxctl.1.
import Foundation
import Glibc

/// One subcommand: its grammar (for parsing and help) and what it does.
struct Subcommand: Sendable {
  var spec: CommandSpec
  /// Runs with parsed arguments; returns the exit status or throws a ``CommandFailure``.
  var run: @Sendable (ParsedArguments) throws -> ExitStatus
}

let subcommands: [Subcommand] = [
  createCommand, configCommand, drainCommand, enqueueCommand, claimCommand, ackCommand,
  releaseCommand, renewCommand, cancelCommand, holdCommand, resumeCommand, statusCommand,
  listCommand, showCommand, namespacesCommand,
  maintainCommand,
  quarantineCommand, watchCommand, eventsCommand, demoCommand, demoProduceCommand, migrateCommand,
]

/// The version `mailboxctl --version` prints (semantic versioning).
let mailboxctlVersion = "0.2.0"

let topLevelHelp: String = {
  var lines = [
    "usage: mailboxctl <subcommand> [options]", "       mailboxctl --version", "",
    "Drain, fill, inspect and repair an AppGroupMailbox (a durable file-based mailbox).", "",
    "subcommands:",
  ]
  for command in subcommands where !command.spec.hidden {
    let name = command.spec.name
    lines.append(
      "  " + name + String(repeating: " ", count: max(2, 13 - name.count)) + command.spec.summary)
  }
  lines += [
    "",
    "Run 'mailboxctl <subcommand> --help' or 'mailboxctl help <subcommand>' for its options;",
    "see mailboxctl(1).",
    "Exit status: 0 ok, 64 usage, 65 bad data (cancel: the message is in quarantine; migrate:",
    "messages older than the lifetime left in place), 66 no such mailbox, message or claim (or",
    "unreadable input), 69 unavailable (or handler not found or not executable, or a directory",
    "migrate has not converted), 70 internal check failed (demo), 71 cannot start a handler",
    "otherwise, 73 mailbox already exists, 74 I/O error, 75 temporary failure (full, handler",
    "failed, cancel: the message is claimed, migrate: a process of the old format holds its",
    "lock), 76 handler's greeting answered wrongly, 130 interrupted (events: 0).",
  ]
  return lines.joined(separator: "\n") + "\n"
}()

/// Parses and runs the command line; returns the exit status.
func runMain(_ arguments: [String]) -> ExitStatus {
  guard let name = arguments.first else {
    Output.raw(topLevelHelp)
    return .usage
  }
  if name == "--version" {
    try? Output.data("mailboxctl \(mailboxctlVersion) (AppGroupMailbox on-disk format 1)\n")
    return .success
  }
  if name == "--help" || name == "-h" || name == "help" {
    // `help SUBCOMMAND` is `SUBCOMMAND --help`.
    guard arguments.count > 1 else {
      try? Output.data(topLevelHelp)
      return .success
    }
    guard let command = subcommands.first(where: { $0.spec.name == arguments[1] }) else {
      Output.error("help: unknown subcommand '\(arguments[1])'")
      Output.raw("Run 'mailboxctl --help' for the list.\n")
      return .usage
    }
    try? Output.data(ArgumentParser.help(for: command.spec))
    return .success
  }
  guard let command = subcommands.first(where: { $0.spec.name == name }) else {
    Output.error("unknown subcommand '\(name)'")
    Output.raw("Run 'mailboxctl --help' for the list.\n")
    return .usage
  }
  do {
    let parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), spec: command.spec)
    if parsed.wantsHelp {
      try Output.data(ArgumentParser.help(for: command.spec))
      return .success
    }
    return try command.run(parsed)
  } catch let error as UsageError {
    Output.error("\(name): \(error.message)")
    Output.raw("Run 'mailboxctl \(name) --help' for usage.\n")
    return .usage
  } catch let failure as CommandFailure {
    // A cause that names the operation already ("enqueue: renameat2 failed: ...") is not
    // prefixed with the command's name again.
    let text =
      failure.message.hasPrefix("\(name): ") ? failure.message : "\(name): \(failure.message)"
    Output.error(text)
    if failure.status == .usage {
      Output.raw("Run 'mailboxctl \(name) --help' for usage.\n")
    }
    return failure.status
  } catch {
    let failure = CommandFailure(error, while: name)
    Output.error(failure.message)
    return failure.status
  }
}

/// The position (1 for the first after the program's name) of the first command-line argument
/// whose bytes are not UTF-8, or nil. `CommandLine.arguments` repairs such bytes (U+FFFD), so a
/// message given with `--data`, a path or a type tag would silently become other bytes than
/// were given: such a command line is refused instead.
func firstArgumentNotUTF8() -> Int? {
  for index in 1..<Int(CommandLine.argc) {
    guard let argument = CommandLine.unsafeArgv[index] else { continue }
    let bytes = UnsafeBufferPointer(
      start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self),
      count: strlen(argument))
    if String(validating: bytes, as: UTF8.self) == nil { return index }
  }
  return nil
}

StandardStreams.reserveClosed()
Signals.ignoreBrokenPipe()
if let index = firstArgumentNotUTF8() {
  Output.error(
    "argument \(index) is not UTF-8 text: mailboxctl would read other bytes than were given; "
      + "nothing was done")
  exit(ExitStatus.usage.rawValue)
}
exit(runMain(Array(CommandLine.arguments.dropFirst())).rawValue)
