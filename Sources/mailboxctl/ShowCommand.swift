import AppGroupMailbox
import Foundation

/// `mailboxctl show ID`: one message's envelope.
let showCommand = Subcommand(
  spec: CommandSpec(
    name: "show",
    summary: "Show one message's envelope (by id or file name); --message adds its contents.",
    positionalUsage: "ID", minPositionals: 1, maxPositionals: 1,
    options: MailboxOptions.reading([
      .flag("--message", "Also print the encoded message."),
      MailboxOptions.json,
    ]),
    details: """
      ID is a message id or a file name in pending/, claimed/ or quarantine/. The file is
      opened without following links and read only up to the mailbox's payload limit. A
      file that is not a readable envelope shows why: unsafe, linked, oversized, malformed,
      future or vanished (JSON: "unreadable"). Exit status 66 when no such message exists.
      """),
  run: { arguments in
    let selector = arguments.positionals[0]
    let (inspector, _) = try MailboxOptions.openForReading(arguments)
    let envelope: AppGroupMailboxEnvelope?
    do {
      envelope = try inspector.envelope(
        selector, includeMessage: arguments.flag("--message"))
    } catch {
      throw CommandFailure(error, while: "")
    }
    guard let envelope else { throw CommandFailure(.noInput, "no such message: \(selector)") }
    try EntryFormat.printEnvelope(envelope, json: arguments.flag("--json"))
    return .success
  })
