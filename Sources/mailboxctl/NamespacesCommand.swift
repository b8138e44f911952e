import AppGroupMailbox
import Foundation

/// `mailboxctl namespaces`: the mailboxes of one container, each with its counts.
let namespacesCommand = Subcommand(
  spec: CommandSpec(
    name: "namespaces",
    summary: "List the mailboxes (namespaces) of a container with their counts.",
    options: Array(MailboxOptions.location.prefix(2)) + [MailboxOptions.json]
      + MailboxOptions.hidden([MailboxOptions.claimTimeout, MailboxOptions.relaxed]),
    details: """
      One row a namespace, in byte order of the names: its depth (pending + delayed +
      claimed, what --max-messages bounds), pending, delayed, claimed and quarantined
      messages, and whether delivery is held. Read from file names only, as 'status' does:
      nothing is created or written. A namespace is a directory below
      CONTAINER/AppGroupMailbox/ whose name is a valid namespace; symbolic links and other
      entries are left out, and so is a namespace removed while it is listed (or one whose
      areas are not there). JSON: one object a line, {"namespace", "depth", "pending",
      "delayed", "claimed", "quarantined", "held"}.
      A namespace that cannot be read (files of the old format that 'migrate' has not
      converted, no permission) prints "-" for its counts (JSON: {"namespace", "error"}), its
      reason goes to stderr, and the command exits 69 after listing the others.
      Exit status: 0 listed (nothing printed when the container has no mailbox yet), 64 usage,
      66 no such container, 69 the container cannot be opened (naming the errno) or a
      namespace cannot be read.
      """),
  run: { arguments in
    let container = try MailboxOptions.location(arguments).container
    // A bad value is a usage error before anything is listed, not every namespace unreadable.
    _ = try MailboxOptions.limits(arguments)
    let names: [String]
    do {
      names = try AppGroupMailboxNamespace.all(inContainer: container)
    } catch let error as AppGroupMailboxError {
      // As the other commands that only look: a missing container is 66, one that cannot be
      // reached 69 naming the errno.
      guard let cause = error.containerUnavailableCause else {
        throw CommandFailure(error, while: "namespaces")
      }
      let missing = cause.errno == ENOENT && cause.role == "container"
      throw CommandFailure(
        missing ? .noInput : .unavailable,
        missing
          ? "no such container: \(container.path)"
          : "cannot list the mailboxes of \(container.path): \(cause.failure)")
    }
    let json = arguments.flag("--json")
    if !json, !names.isEmpty { try Output.data(NamespaceRow.header + "\n") }
    var unreadable = 0
    for name in names {
      let location = MailboxOptions.Location(container: container, namespace: name)
      let row: NamespaceRow
      do {
        let inspector = try MailboxOptions.openForReading(location, arguments)
        row = .counts(try inspector.counts(), held: inspector.isHeld)
      } catch let failure as CommandFailure where failure.status == .noInput {
        continue  // removed (or not made whole yet) since the listing
      } catch {
        let failure = error as? CommandFailure ?? CommandFailure(error, while: "status")
        Output.note("namespaces: \(name): \(failure.message)")
        unreadable += 1
        row = .unreadable(failure.message)
      }
      try Output.data((json ? row.object(name).text : row.text(name)) + "\n")
    }
    return unreadable == 0 ? .success : .unavailable
  })

/// One namespace as `namespaces` prints it.
private enum NamespaceRow {
  case counts(AppGroupMailboxCounts, held: Bool)
  case unreadable(String)

  static let header =
    "NAMESPACE                         DEPTH  PENDING  DELAYED  CLAIMED  QUARANTINED  HELD"

  /// The text row: the name padded to 32 characters, then right-aligned counts.
  func text(_ name: String) -> String {
    func column(_ value: String, _ width: Int) -> String {
      String(repeating: " ", count: max(1, width - value.count)) + value
    }
    let counts: [String]
    let held: String
    switch self {
    case .counts(let status, let isHeld):
      counts = [status.depth, status.pending, status.delayed, status.claimed, status.quarantined]
        .map(String.init)
      held = isHeld ? "yes" : "no"
    case .unreadable:
      counts = Array(repeating: "-", count: 5)
      held = "-"
    }
    return EntryFormat.pad(name, 32) + column(counts[0], 7) + column(counts[1], 9)
      + column(counts[2], 9) + column(counts[3], 9) + column(counts[4], 13) + "  " + held
  }

  /// The JSON object.
  func object(_ name: String) -> JSONObject {
    var object = JSONObject()
    object.add("namespace", name)
    switch self {
    case .counts(let status, let held):
      object.add("depth", status.depth)
      object.add("pending", status.pending)
      object.add("delayed", status.delayed)
      object.add("claimed", status.claimed)
      object.add("quarantined", status.quarantined)
      object.add("held", held)
    case .unreadable(let reason):
      object.add("error", reason)
    }
    return object
  }
}
