import AppGroupMailbox
import Foundation
import Glibc

/// The options every mailbox subcommand shares: where the mailbox is, and the limits to open it
/// with (limits are not stored in the mailbox; each process applies its own).
enum MailboxOptions {
  static let location: [OptionSpec] = [
    OptionSpec(name: "--container", kind: .value("DIR"), help: "The container directory."),
    OptionSpec(
      name: "--app-group", kind: .value("ID"),
      help: "The app group whose container to use ($APP_GROUP_CONTAINER_ROOT/ID, else "
        + "$XDG_DATA_HOME/app-groups/ID, else ~/.local/share/app-groups/ID)."),
    OptionSpec(
      name: "--namespace", kind: .value("NS"),
      help: "The mailbox namespace (1-64 of A-Z a-z 0-9 . _ -); default 'default'."),
  ]

  static let limits: [OptionSpec] = [
    OptionSpec(
      name: "--max-messages", kind: .value("N"), help: "Pending plus claimed bound (default 100)."),
    OptionSpec(
      name: "--max-payload-bytes", kind: .value("N"),
      help: "Largest message file in bytes (default 65536)."),
    OptionSpec(
      name: "--message-lifetime", kind: .value("SECONDS"),
      help: "Lifetime from enqueue (default 86400)."),
    OptionSpec(
      name: "--claim-timeout", kind: .value("SECONDS"),
      help: "Lease of a claim before recovery (default 600)."),
    OptionSpec(
      name: "--max-quarantined-files", kind: .value("N"), help: "Quarantine bound (default 20)."),
    OptionSpec(
      name: "--max-delivery-attempts", kind: .value("N"),
      help: "Deliveries before a dead letter is quarantined (default unlimited)."),
    OptionSpec(
      name: "--overflow", kind: .value("POLICY"),
      help: "reject-newest (default) or discard-oldest."),
    OptionSpec(
      name: "--relaxed", kind: .flag, help: "Skip flushes (survives crashes, not power loss)."),
    OptionSpec(name: "--group-shared", kind: .flag, help: "Create with group modes (02770/0660)."),
  ]

  static let json = OptionSpec(
    name: "--json", kind: .flag, help: "Print JSON (JSON Lines for lists).")

  /// Where a mailbox is: its container and namespace.
  struct Location {
    var container: URL
    var namespace: String
    var directory: URL {
      container.appendingPathComponent("AppGroupMailbox").appendingPathComponent(namespace)
    }
  }

  static func location(_ arguments: ParsedArguments) throws(CommandFailure) -> Location {
    let namespace = arguments.value("--namespace") ?? "default"
    guard isValidNamespace(namespace) else {
      throw CommandFailure(.usage, "invalid namespace '\(namespace)'")
    }
    switch (arguments.value("--container"), arguments.value("--app-group")) {
    case (let directory?, nil):
      return Location(container: URL(fileURLWithPath: directory), namespace: namespace)
    case (nil, let group?):
      do {
        return Location(
          container: try AppGroupContainer.url(forIdentifier: group), namespace: namespace)
      } catch {
        throw CommandFailure(.usage, "invalid app group identifier '\(group)'")
      }
    case (nil, nil):
      throw CommandFailure(.usage, "give --container DIR or --app-group ID")
    case (_?, _?):
      throw CommandFailure(.usage, "give --container or --app-group, not both")
    }
  }

  static func isValidNamespace(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    guard (1...64).contains(bytes.count), !bytes.allSatisfy({ $0 == UInt8(ascii: ".") }) else {
      return false
    }
    return name.unicodeScalars.allSatisfy { scalar in
      scalar.isASCII
        && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
    }
  }

  static func limits(_ arguments: ParsedArguments) throws(UsageError) -> AppGroupMailboxLimits {
    var limits = AppGroupMailboxLimits()
    if let value = try arguments.integer("--max-messages", in: 1...Int(Int32.max)) {
      limits.maxMessages = value
    }
    if let value = try arguments.integer(
      "--max-payload-bytes", in: 1...AppGroupMailboxLimits.payloadCeiling)
    {
      limits.maxPayloadBytes = value
    }
    if let value = try arguments.seconds("--message-lifetime") { limits.messageLifetime = value }
    if let value = try arguments.seconds("--claim-timeout") { limits.claimTimeout = value }
    if let value = try arguments.integer("--max-quarantined-files", in: 0...1_000_000) {
      limits.maxQuarantinedFiles = value
    }
    if let value = try arguments.integer("--max-delivery-attempts", in: 1...1_000_000) {
      limits.maxDeliveryAttempts = value
    }
    return limits
  }

  static func overflow(_ arguments: ParsedArguments) throws(UsageError)
    -> AppGroupMailboxOverflowPolicy
  {
    switch arguments.value("--overflow") {
    case nil, "reject-newest": return .rejectNewest
    case "discard-oldest": return .discardOldest
    case let other?:
      throw UsageError(message: "--overflow needs reject-newest or discard-oldest, not '\(other)'")
    }
  }

  /// Opens the mailbox the arguments name. With `mustExist`, a namespace directory that does not
  /// exist is ``ExitStatus/noInput`` (66) and nothing is created.
  static func open(
    _ arguments: ParsedArguments, mustExist: Bool,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil
  ) throws -> (AppGroupRawMailbox, Location) {
    let location = try location(arguments)
    let limits = try limits(arguments)
    let overflow = try overflow(arguments)
    if mustExist {
      var info = stat()
      guard lstat(location.directory.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
        throw CommandFailure(.noInput, "no such mailbox: \(location.directory.path)")
      }
    }
    do {
      let mailbox = try AppGroupRawMailbox(
        containerURL: location.container, namespace: location.namespace, limits: limits,
        overflowPolicy: overflow, diagnostic: diagnostic,
        durability: arguments.flag("--relaxed") ? .relaxed : .full,
        permissions: arguments.flag("--group-shared") ? .groupShared : .private)
      return (mailbox, location)
    } catch let error as AppGroupMailboxError {
      if error == .containerUnavailable {
        throw CommandFailure(
          .unavailable, "cannot open the mailbox at \(location.directory.path)")
      }
      throw CommandFailure(error, while: "open")
    }
  }
}
