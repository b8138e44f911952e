import AppGroupMailbox
import Foundation

/// The settings a mailbox stores, as options: how `create` and `config` list them, and how
/// every opener reads them into settings and limits.
extension MailboxOptions {
  /// The settings a mailbox stores, as `create` lists them: with their defaults.
  static let settings = settingOptions(create: true)

  /// The settings as `config` lists them: without defaults (it changes only what is given),
  /// `--group-shared` hidden (accepted, then refused: the sharing mode is fixed at creation).
  static let settingChanges = settingOptions(create: false)

  private static func settingOptions(create: Bool) -> [OptionSpec] {
    func help(_ text: String, _ defaultValue: String) -> String {
      create ? "\(text) (default \(defaultValue))." : "\(text)."
    }
    var sharing = OptionSpec.flag(
      "--group-shared", "Group-shared modes (02770/0660) instead of private (0700/0600).")
    sharing.hidden = !create
    return [
      .value("--max-messages", "N", help("Depth bound: pending + delayed + claimed", "100")),
      .value("--max-payload-bytes", "N", help("Largest message file in bytes", "65536")),
      .value(
        "--message-lifetime", "SECONDS",
        help("Lifetime from enqueue; older messages are deleted undelivered", "86400")),
      .value("--max-quarantined-files", "N", help("Quarantine bound", "20")),
      .value(
        "--max-delivery-attempts", "N",
        create
          ? "Deliveries before a dead letter is quarantined, or 'unlimited' (the default)."
          : "Deliveries before a dead letter is quarantined, or 'unlimited'."),
      .value(
        "--overflow", "POLICY",
        create ? "reject-newest (default) or discard-oldest." : "reject-newest or discard-oldest."),
      sharing,
    ]
  }

  /// The limits an opener passes: the settings options given (the defaults for the rest) and
  /// `--claim-timeout`.
  static func limits(_ arguments: ParsedArguments) throws(UsageError) -> AppGroupMailboxLimits {
    try settings(arguments, over: AppGroupMailboxSettings())
      .limits(
        claimTimeout: try arguments.seconds("--claim-timeout") ?? 600)
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

  /// The size of the smallest message file in bytes (the header line of an untyped message and
  /// the 1-byte message `0`), as the library encodes it.
  static let smallestMessageFile: Int = {
    do {
      try AppGroupRawMailbox.validate(
        Data("0".utf8), limits: AppGroupMailboxLimits(maxPayloadBytes: 1))
    } catch AppGroupMailboxError.payloadTooLarge(let actual, _) {
      return actual
    } catch {}
    return 1
  }()

  /// The settings options given on the command line, over `base`.
  static func settings(_ arguments: ParsedArguments, over base: AppGroupMailboxSettings)
    throws(UsageError) -> AppGroupMailboxSettings
  {
    var settings = base
    if let value = try arguments.integer("--max-messages", in: 1...Int(Int32.max)) {
      settings.maxMessages = value
    }
    if let value = try arguments.integer(
      "--max-payload-bytes", in: 1...AppGroupMailboxLimits.payloadCeiling)
    {
      // The limit is of the whole file, header line included (docs/FORMAT.md): below the
      // smallest file no message could be enqueued.
      guard value >= smallestMessageFile else {
        throw UsageError(
          message: "--max-payload-bytes \(value) is below the smallest message file, "
            + "\(smallestMessageFile) bytes (the header line and a 1-byte message; the limit "
            + "counts the whole file): every enqueue would be refused")
      }
      settings.maxPayloadBytes = value
    }
    if let value = try arguments.seconds("--message-lifetime") { settings.messageLifetime = value }
    if let value = try arguments.integer("--max-quarantined-files", in: 0...1_000_000) {
      settings.maxQuarantinedFiles = value
    }
    if arguments.value("--max-delivery-attempts") == "unlimited" {
      settings.maxDeliveryAttempts = nil
    } else {
      do {
        if let value = try arguments.integer("--max-delivery-attempts", in: 1...1_000_000) {
          settings.maxDeliveryAttempts = value
        }
      } catch {
        let text = arguments.value("--max-delivery-attempts") ?? ""
        throw UsageError(
          message: "--max-delivery-attempts needs an integer from 1 to 1000000 or 'unlimited', "
            + "not '\(text)'")
      }
    }
    if arguments.value("--overflow") != nil { settings.overflowPolicy = try overflow(arguments) }
    if arguments.flag("--group-shared") { settings.permissions = .groupShared }
    return settings
  }

  /// The settings options present in `arguments`, by name.
  static func givenSettings(_ arguments: ParsedArguments) -> [String] {
    settings.map(\.name).filter { arguments.flag($0) || arguments.value($0) != nil }
  }
}
