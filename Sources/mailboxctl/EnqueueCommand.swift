import AppGroupMailbox
import Foundation

/// `mailboxctl enqueue`: adds one message (stdin or `--data`) or one per line (`--lines`).
let enqueueCommand = Subcommand(
  spec: CommandSpec(
    name: "enqueue",
    summary: "Add a message (JSON from stdin or --data), or one per line with --lines.",
    options: MailboxOptions.location + [
      OptionSpec(name: "--data", kind: .value("JSON"), help: "The message JSON (else stdin)."),
      OptionSpec(
        name: "--lines", kind: .flag,
        help: "Read JSON Lines: one message a line (blank lines skipped)."),
      OptionSpec(
        name: "--id", kind: .value("UUID"),
        help: "The message id; nothing is written while it is pending, claimed or quarantined."),
      OptionSpec(
        name: "--enqueued-at", kind: .value("DATE"),
        help: "Order by this ISO 8601 date (2026-01-31T12:00:00Z) instead of now."),
      OptionSpec(
        name: "--type", kind: .value("TYPE"),
        help: "The message type tag (default none: every consumer accepts it)."),
      MailboxOptions.json,
    ] + MailboxOptions.limits,
    details: """
      Prints each message id on its own line (with --json: {"id", "duplicate"} a line).
      Every message is checked first: input that is not JSON is rejected with its line number
      (exit 65) and nothing is written. A full mailbox stops with exit 75 after printing the
      ids already enqueued.
      """),
  run: { arguments in try runEnqueue(arguments) })

private func runEnqueue(_ arguments: ParsedArguments) throws -> ExitStatus {
  let id = try arguments.value("--id").map { text throws(CommandFailure) -> UUID in
    guard let id = UUID(uuidString: text) else {
      throw CommandFailure(.usage, "--id needs a UUID, not '\(text)'")
    }
    return id
  }
  let date = try arguments.value("--enqueued-at").map { text throws(CommandFailure) -> Date in
    guard let date = ISO8601.parse(text) else {
      throw CommandFailure(.usage, "--enqueued-at needs an ISO 8601 date, not '\(text)'")
    }
    return date
  }
  let type = arguments.value("--type") ?? ""
  let input: Data
  if let data = arguments.value("--data") {
    input = Data(data.utf8)
  } else {
    input = FileHandle.standardInput.readDataToEndOfFile()
  }
  // Messages are ranges of the one input buffer: no copy is held per message.
  var messages: [(line: Int, range: Range<Int>)] = []
  if arguments.flag("--lines") {
    input.withUnsafeBytes { raw in
      let bytes = raw.bindMemory(to: UInt8.self)
      var number = 0
      var start = 0
      while start <= bytes.count {
        let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
        number += 1
        if !bytes[start..<end].allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
          messages.append((number, start..<end))
        }
        start = end + 1
      }
    }
    if id != nil && messages.count > 1 {
      throw CommandFailure(
        .usage, "--id applies to one message, but the input has \(messages.count)")
    }
  } else {
    messages.append((1, 0..<input.count))
  }
  let (mailbox, _) = try MailboxOptions.open(arguments, mustExist: false)
  for message in messages {
    do {
      try mailbox.validate(input.subdata(in: message.range), id: id, messageType: type)
    } catch {
      let place = arguments.flag("--lines") ? "line \(message.line): " : ""
      switch error {
      case AppGroupMailboxError.decodingFailure:
        throw CommandFailure(.dataError, "\(place)not valid JSON; nothing was enqueued")
      case AppGroupMailboxError.payloadTooLarge(let actual, let maximum):
        throw CommandFailure(
          .dataError,
          "\(place)the message file would be \(actual) bytes, over the limit of \(maximum) "
            + "(--max-payload-bytes); nothing was enqueued")
      default:
        throw CommandFailure(error, while: "")
      }
    }
  }
  for message in messages {
    let receipt: AppGroupRawMailbox.Receipt
    do {
      receipt = try mailbox.enqueue(
        input.subdata(in: message.range), id: id, enqueuedAt: date, messageType: type)
    } catch {
      throw CommandFailure(error, while: "")
    }
    let text = receipt.id.uuidString.lowercased()
    if arguments.flag("--json") {
      var object = JSONObject()
      object.add("id", text)
      object.add("duplicate", receipt.wasAlreadyPresent)
      try Output.data(object.text + "\n")
    } else {
      try Output.data(text + "\n")
      if receipt.wasAlreadyPresent {
        Output.note("enqueue: message \(text) is already present; nothing was written")
      }
    }
  }
  return .success
}
