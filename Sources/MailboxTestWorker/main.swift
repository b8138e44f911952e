// A worker process for multi-process tests: `MailboxTestWorker <command> [arguments]`.
// Each command lives in its own file as a `WorkerCommand`; add new ones to `commands` below.
import Foundation

/// One worker command: reads its arguments, prints results on stdout, exits non-zero on failure.
struct WorkerCommand: Sendable {
  var name: String
  var run: @Sendable ([String]) throws -> Void
}

/// Writes one line to stdout at once (unbuffered), so a test reading it sees it immediately.
func emitLine(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let commands: [WorkerCommand] =
  coreCommands
  + hardeningCommands
  + watchCommands
  + inotifyCommands
  + tortureCommands
  + soakCommands
  + spoolFuzzCommands
  + cliCommands
  + tagCommands
  + interopCommands
  + timeValueCommands
  + cancelCommands
  + keyCommands
  + priorityCommands
  + versionCommands

let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let command = commands.first(where: { $0.name == name }) else {
  FileHandle.standardError.write(
    Data("usage: MailboxTestWorker <\(commands.map(\.name).joined(separator: "|"))> ...\n".utf8))
  exit(64)
}
do {
  try command.run(Array(arguments.dropFirst()))
} catch {
  FileHandle.standardError.write(Data("worker \(name) failed: \(error)\n".utf8))
  exit(1)
}
