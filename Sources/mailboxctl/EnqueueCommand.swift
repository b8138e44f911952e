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
        name: "--delay", kind: .value("SECONDS"),
        help: "Not claimable for SECONDS: it waits in delayed/, then joins the line."),
      OptionSpec(
        name: "--not-before", kind: .value("DATE"),
        help: "Not claimable before this ISO 8601 date (a past date: at once)."),
      OptionSpec(
        name: "--type", kind: .value("TYPE"),
        help: "The message type tag (default none: every consumer accepts it)."),
      OptionSpec(
        name: "--wait", kind: .value("SECONDS"),
        help: "When full, wait up to SECONDS per message for room (default: fail at once)."),
      MailboxOptions.json,
    ] + MailboxOptions.limits,
    details: """
      Prints each message id on its own line (with --json: {"id", "duplicate", "notBefore"} a
      line; notBefore is null unless the message waits in delayed/).
      Every message is checked first: input that is not JSON is rejected with its line number
      (exit 65) and nothing is written. A full mailbox stops with exit 75 after printing the
      ids already enqueued, naming the depth, the bound and (with --lines) the first line not
      stored. With --wait, a message that finds the mailbox full waits for room (woken when a
      message is acknowledged, expires, is discarded or quarantined) up to SECONDS, so with
      --lines the whole input goes in as consumers make room.
      --delay and --not-before (one of them) hold the message back: it is not pending until
      then, but counts toward the depth bound; when due it joins the line at its due time. With
      --lines every message gets the same due time. A due time past the mailbox's message lifetime
      (from the enqueue time) is rejected (exit 65): the message would expire first.
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
  let notBefore = try notBeforeDate(arguments)
  let wait = try arguments.seconds("--wait") ?? 0
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
    // Whitespace after the JSON value (the newline echo and heredocs add) means nothing in JSON;
    // drop it so the stored message is the value alone.
    var end = input.count
    while end > 0, [0x20, 0x09, 0x0A, 0x0D].contains(input[input.startIndex + end - 1]) { end -= 1 }
    messages.append((1, 0..<end))
  }
  let (mailbox, _) = try MailboxOptions.open(arguments, mustExist: false)
  if let notBefore {
    let lifetime = mailbox.limits.messageLifetime
    if notBefore.timeIntervalSince(date ?? Date()) >= lifetime {
      throw CommandFailure(
        .dataError,
        "the message would expire (lifetime \(Drainer.format(seconds: lifetime)) s, "
          + "the mailbox's messageLifetime) before it is due; nothing was enqueued")
    }
  }
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
            + "(the mailbox's maxPayloadBytes); nothing was enqueued")
      default:
        throw CommandFailure(error, while: "")
      }
    }
  }
  for (index, message) in messages.enumerated() {
    let receipt: AppGroupRawMailbox.Receipt
    do {
      let payload = input.subdata(in: message.range)
      receipt = try mailbox.waitingForRoom(upTo: wait) {
        if let notBefore {
          return try mailbox.enqueue(
            payload, id: id, enqueuedAt: date, notBefore: notBefore, messageType: type)
        }
        return try mailbox.enqueue(payload, id: id, enqueuedAt: date, messageType: type)
      }
    } catch AppGroupMailboxError.mailboxFull {
      throw fullFailure(
        mailbox, waited: wait, line: arguments.flag("--lines") ? message.line : nil,
        stored: index)
    } catch {
      throw CommandFailure(error, while: "")
    }
    let text = receipt.id.uuidString.lowercased()
    if receipt.expiredBeforeDue {
      throw CommandFailure(
        .dataError, "message \(text) would expire before it is due; it was not enqueued")
    }
    if arguments.flag("--json") {
      var object = JSONObject()
      object.add("id", text)
      object.add("duplicate", receipt.wasAlreadyPresent)
      object.add("notBefore", date: receipt.notBefore)
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

/// "Mailbox full", with the depth and the bound, how long it waited, and for `--lines` the
/// first line not stored.
private func fullFailure(_ mailbox: AppGroupRawMailbox, waited: Double, line: Int?, stored: Int)
  -> CommandFailure
{
  let depth = (try? mailbox.inspector.status().depth).map(String.init) ?? "unknown"
  var text = "the mailbox is full (depth \(depth), maxMessages \(mailbox.settings.maxMessages))"
  if waited > 0 { text += " after waiting \(Drainer.format(seconds: waited)) s" }
  if let line {
    text += "; line \(line) and the lines after it were not enqueued (\(stored) enqueued)"
  } else {
    text += "; nothing was enqueued"
  }
  return CommandFailure(.temporaryFailure, text)
}

/// The due time of `--delay SECONDS` (from now) or `--not-before DATE`; nil when neither is
/// given.
/// - Throws: ``CommandFailure`` (usage) when both are given or a value is invalid.
private func notBeforeDate(_ arguments: ParsedArguments) throws -> Date? {
  switch (arguments.value("--delay"), arguments.value("--not-before")) {
  case (nil, nil):
    return nil
  case (_?, _?):
    throw CommandFailure(.usage, "give --delay or --not-before, not both")
  case (_?, nil):
    return Date().addingTimeInterval(try arguments.seconds("--delay") ?? 0)
  case (nil, let text?):
    guard let date = ISO8601.parse(text) else {
      throw CommandFailure(.usage, "--not-before needs an ISO 8601 date, not '\(text)'")
    }
    return date
  }
}
