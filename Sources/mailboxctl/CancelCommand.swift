import AppGroupMailbox
import Foundation

/// `mailboxctl cancel ID`: delete a pending or delayed message so that no consumer gets it.
let cancelCommand = Subcommand(
  spec: CommandSpec(
    name: "cancel",
    summary: "Cancel a pending or delayed message by id (a claimed one is refused).",
    positionalUsage: "ID", minPositionals: 1, maxPositionals: 1,
    options: MailboxOptions.writing([MailboxOptions.json]),
    details: """
      ID is a message id (any case). A pending or delayed message is deleted and prints
      "cancelled ID". A claimed message is refused: its holder decides (an acknowledge ends it;
      a release or a lease that runs out puts it back, cancellable then). A quarantined one is
      left to 'mailboxctl quarantine purge FILE' (FILE is printed). Raced with a claim, exactly
      one of the two gets the message. With --json one line
      {"id", "outcome", "quarantineFile"} on stdout for every outcome, outcome one of
      "cancelled", "claimed", "quarantined", "notFound".

      Exit status: 0 cancelled, 64 ID is not a message id, 65 the message is in quarantine,
      66 no such mailbox or no such message, 74 I/O error, 75 a consumer holds the message
      (try again after it releases it).
      """),
  run: { arguments in
    let text = arguments.positionals[0]
    guard let id = UUID(uuidString: text) else {
      throw CommandFailure(.usage, "ID is not a message id (a UUID): '\(text)'")
    }
    let (mailbox, _) = try MailboxOptions.open(arguments, mustExist: true)
    let outcome: AppGroupMailboxCancelOutcome
    do {
      outcome = try mailbox.cancel(id: id)
    } catch {
      throw CommandFailure(error, while: "")
    }
    let shown = id.uuidString.lowercased()
    let (name, status, message): (String, ExitStatus, String)
    var file: String?
    switch outcome {
    case .cancelled:
      (name, status, message) = ("cancelled", .success, "")
    case .claimed:
      (name, status, message) = (
        "claimed", .temporaryFailure,
        "\(shown) is claimed; its holder decides (nothing was changed)"
      )
    case .quarantined(let fileName):
      file = fileName
      (name, status, message) = (
        "quarantined", .dataError,
        "\(shown) is in quarantine as \(fileName); remove it with 'mailboxctl quarantine "
          + "purge\(MailboxOptions.locationArguments(arguments)) \(fileName)' (nothing was changed)"
      )
    case .notFound:
      (name, status, message) = ("notFound", .noInput, "no such message: \(shown)")
    }
    if arguments.flag("--json") {
      var object = JSONObject()
      object.add("id", shown)
      object.add("outcome", name)
      object.add("quarantineFile", file)
      try Output.data(object.text + "\n")
    } else if status == .success {
      try Output.data("cancelled \(shown)\n")
    }
    if status != .success { throw CommandFailure(status, message) }
    return .success
  })
