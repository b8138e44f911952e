public import Foundation

/// What a mailbox keeps about itself in its `settings` file (docs/FORMAT.md, "The settings
/// file"): the bounds every opener follows, the overflow policy, the sharing mode and whether
/// delivery is held. Written once, when the namespace is created; changed only by
/// ``AppGroupRawMailbox/updateSettings(_:)`` (`mailboxctl config`) and, for the hold, by
/// ``AppGroupRawMailbox/pause()`` and ``AppGroupRawMailbox/resume()`` (`mailboxctl hold` and
/// `mailboxctl resume`).
///
/// Which choices belong to the mailbox and which to each opener:
/// - The mailbox's: ``maxMessages``, ``maxPayloadBytes``, ``messageLifetime``,
///   ``maxQuarantinedFiles``, ``maxDeliveryAttempts``, ``overflowPolicy``, ``permissions`` and
///   ``isHeld``.
///   A producer and a consumer of one mailbox therefore always agree on what may be stored,
///   kept and delivered.
/// - The opener's: ``AppGroupMailboxLimits/claimTimeout`` (the lease of this process's own
///   claims; a claim's deadline is in its name, so others honour it), durability and polling
///   intervals.
public struct AppGroupMailboxSettings: Sendable, Equatable, Hashable {
  /// The depth bound: messages pending plus delayed plus claimed; at least 1.
  public var maxMessages: Int
  /// The largest message file a producer may write, in bytes, 1 to 64 MiB.
  public var maxPayloadBytes: Int
  /// Seconds a message lives from its `enqueuedAt`; greater than 0.
  public var messageLifetime: TimeInterval
  /// The quarantine bound; 0 deletes instead of keeping.
  public var maxQuarantinedFiles: Int
  /// Deliveries before a dead letter; nil is unlimited.
  public var maxDeliveryAttempts: Int?
  /// What a full mailbox does with a new message.
  public var overflowPolicy: AppGroupMailboxOverflowPolicy
  /// The sharing mode (file modes) fixed when the mailbox was created; never changed after.
  public var permissions: AppGroupMailboxPermissions
  /// The largest ``maxPayloadBytes`` this mailbox ever had: consumers read files up to this
  /// size, so lowering the payload limit never turns a message a producer was allowed to write
  /// into an oversized one. Raised by every change that raises ``maxPayloadBytes``.
  public internal(set) var largestPayloadBytes: Int
  /// Whether delivery is held (``AppGroupRawMailbox/pause()``): claims return nothing and
  /// drains wait until ``AppGroupRawMailbox/resume()``; enqueues go on. False for a new
  /// mailbox; ``AppGroupRawMailbox/updateSettings(_:)`` keeps it as it is.
  public internal(set) var isHeld = false

  /// The newest `settings` file format this build reads and writes (docs/FORMAT.md, "The
  /// settings file"); it reads every format from 1 up to this one. Opening a mailbox whose
  /// settings file has a newer format throws ``AppGroupMailboxError/invalidLimit(_:)`` with
  /// `"settings format N"` (a Linux addition).
  public static var newestFormat: Int { SettingsText.format }

  /// Settings from the limits, policy and sharing mode a mailbox is created with
  /// (`limits.claimTimeout` is the opener's and is not stored).
  public init(
    limits: AppGroupMailboxLimits = .init(),
    overflowPolicy: AppGroupMailboxOverflowPolicy = .rejectNewest,
    permissions: AppGroupMailboxPermissions = .private
  ) {
    maxMessages = limits.maxMessages
    maxPayloadBytes = limits.maxPayloadBytes
    messageLifetime = limits.messageLifetime
    maxQuarantinedFiles = limits.maxQuarantinedFiles
    maxDeliveryAttempts = limits.maxDeliveryAttempts
    self.overflowPolicy = overflowPolicy
    self.permissions = permissions
    largestPayloadBytes = limits.maxPayloadBytes
  }

  /// These bounds as limits, with `claimTimeout` (the opener's) filled in.
  public func limits(claimTimeout: TimeInterval) -> AppGroupMailboxLimits {
    AppGroupMailboxLimits(
      maxMessages: maxMessages, maxPayloadBytes: maxPayloadBytes,
      messageLifetime: messageLifetime, claimTimeout: claimTimeout,
      maxQuarantinedFiles: maxQuarantinedFiles, maxDeliveryAttempts: maxDeliveryAttempts)
  }

  /// Checks every stored bound as ``AppGroupMailboxLimits/validate()`` does.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming the first offending field.
  public func validate() throws {
    try limits(claimTimeout: 600).validate()
  }

  /// The names of the stored fields in which `other` differs from these settings, in file
  /// order (`"maxMessages"`, `"maxPayloadBytes"`, `"messageLifetime"`, `"maxQuarantinedFiles"`,
  /// `"maxDeliveryAttempts"`, `"overflowPolicy"`, `"sharing"`, `"held"`).
  public func differences(from other: AppGroupMailboxSettings) -> [String] {
    var fields: [String] = []
    if maxMessages != other.maxMessages { fields.append("maxMessages") }
    if maxPayloadBytes != other.maxPayloadBytes { fields.append("maxPayloadBytes") }
    if messageLifetime != other.messageLifetime { fields.append("messageLifetime") }
    if maxQuarantinedFiles != other.maxQuarantinedFiles { fields.append("maxQuarantinedFiles") }
    if maxDeliveryAttempts != other.maxDeliveryAttempts { fields.append("maxDeliveryAttempts") }
    if overflowPolicy != other.overflowPolicy { fields.append("overflowPolicy") }
    if permissions != other.permissions { fields.append("sharing") }
    if isHeld != other.isHeld { fields.append("held") }
    return fields
  }
}

/// The `settings` file's text form (docs/FORMAT.md): one JSON object on one line. Format 2
/// adds `held`, which an older reader must not ignore (it would deliver from a held mailbox);
/// older readers refuse a format newer than theirs, so a held mailbox is written as format 2
/// and any other as format 1, which every reader since settings files reads.
enum SettingsText {
  /// The newest format read and written.
  static let format = 2
  /// The largest settings file read, in bytes.
  static let maxBytes = 4096

  /// The members this build reads and writes; a file's other members are kept by a change
  /// (``Decoded/otherMembers``).
  static let knownMembers: Set<[UInt8]> = Set(
    [
      "format", "maxMessages", "maxPayloadBytes", "largestPayloadBytes", "messageLifetime",
      "maxQuarantinedFiles", "maxDeliveryAttempts", "overflowPolicy", "sharing", "held",
    ].map { Array($0.utf8) })

  /// `settings` as the file's line, with `otherMembers` (``Decoded/otherMembers``: members a
  /// newer writer added, as their text) before the closing brace.
  static func encode(_ settings: AppGroupMailboxSettings, otherMembers: [UInt8] = []) -> Data {
    let attempts = settings.maxDeliveryAttempts.map(String.init) ?? "null"
    let lifetime =
      settings.messageLifetime == settings.messageLifetime.rounded()
        && abs(settings.messageLifetime) < 1e15
      ? String(Int64(settings.messageLifetime)) : String(settings.messageLifetime)
    let policy = settings.overflowPolicy == .rejectNewest ? "rejectNewest" : "discardOldest"
    let sharing = settings.permissions == .private ? "private" : "groupShared"
    let line =
      "{\"format\":\(settings.isHeld ? 2 : 1),\"maxMessages\":\(settings.maxMessages),"
      + "\"maxPayloadBytes\":\(settings.maxPayloadBytes),"
      + "\"largestPayloadBytes\":\(settings.largestPayloadBytes),"
      + "\"messageLifetime\":\(lifetime),"
      + "\"maxQuarantinedFiles\":\(settings.maxQuarantinedFiles),"
      + "\"maxDeliveryAttempts\":\(attempts),"
      + "\"overflowPolicy\":\"\(policy)\",\"sharing\":\"\(sharing)\""
      + (settings.isHeld ? ",\"held\":true" : "")
    var file = Data(line.utf8)
    if !otherMembers.isEmpty {
      file.append(UInt8(ascii: ","))
      file.append(contentsOf: otherMembers)
    }
    file.append(contentsOf: "}\n".utf8)
    return file
  }

  /// A settings file read: its settings, and the members this build does not know.
  struct Decoded {
    var settings: AppGroupMailboxSettings
    /// The members whose names are not in ``knownMembers`` (hints a newer writer added within
    /// the format, docs/FORMAT.md), as their text in the file (name, colon and value), in file
    /// order and separated by commas; empty when there are none. A change writes them back.
    var otherMembers: [UInt8] = []
  }

  /// What a settings file failed on.
  enum Failure: Error, Equatable {
    /// Not one JSON object with every member valid; the text says what is wrong (a member's name,
    /// never its value).
    case unreadable(String)
    /// A `format` newer than this library reads.
    case futureFormat(Int)
  }

  static func decode(_ bytes: [UInt8]) throws(Failure) -> Decoded {
    guard let listed = bytes.withUnsafeBytes(JSONSyntax.objectMembers) else {
      throw .unreadable("not one JSON object")
    }
    // JSONSerialization takes the last of two members of one name; a reader that took the first
    // would read another hold or bound (docs/FORMAT.md, "The settings file").
    guard let members = bytes.withUnsafeBytes({ JSONSyntax.byDistinctName(listed, in: $0) })
    else {
      throw .unreadable("a member name is given twice or is not valid Unicode")
    }
    // Numbers are read from their text: the nearest double, as strtod(3) and Python's float()
    // round it. JSONSerialization's NSNumber may hold a Decimal whose conversion rounds
    // otherwise (`1.99999999999999999999` read as 1 for one reader, 2 for the other).
    func number(_ name: String) -> Double? {
      guard let range = members[Array(name.utf8)], JSONSyntax.isNumber(bytes[range]) else {
        return nil
      }
      return Double(String(decoding: bytes[range], as: UTF8.self))
    }
    func integer(_ name: String) -> Int? {
      guard let value = number(name), value.rounded() == value, abs(value) < 9e15 else {
        return nil
      }
      return Int(value)
    }
    // It also refuses a lone surrogate escape in any string and a number past Double's range.
    guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    else { throw .unreadable("not one JSON object") }
    guard let format = integer("format") else {
      throw .unreadable("'format' is missing or not an integer")
    }
    guard format <= Self.format else { throw .futureFormat(format) }
    guard format >= 1 else { throw .unreadable("'format' is below 1") }
    func member<T>(_ name: String, _ value: T?) throws(Failure) -> T {
      guard let value else { throw .unreadable("'\(name)' is missing or of the wrong type") }
      return value
    }
    func integerMember(_ name: String) throws(Failure) -> Int {
      if let value = integer(name) { return value }
      guard number(name) == nil else {
        throw .unreadable("'\(name)' is not a whole number below 9 * 10^15")
      }
      return try member(name, nil)
    }
    let maxMessages = try integerMember("maxMessages")
    let maxPayloadBytes = try integerMember("maxPayloadBytes")
    let lifetime = try member("messageLifetime", number("messageLifetime"))
    let quarantined = try integerMember("maxQuarantinedFiles")
    let policyText = try member("overflowPolicy", object["overflowPolicy"] as? String)
    let sharingText = try member("sharing", object["sharing"] as? String)
    let attempts: Int?
    switch object["maxDeliveryAttempts"] {
    case nil, is NSNull: attempts = nil
    default:
      attempts = try integerMember("maxDeliveryAttempts")
    }
    let policy: AppGroupMailboxOverflowPolicy
    switch policyText {
    case "rejectNewest": policy = .rejectNewest
    case "discardOldest": policy = .discardOldest
    default: throw .unreadable("'overflowPolicy' is neither rejectNewest nor discardOldest")
    }
    let permissions: AppGroupMailboxPermissions
    switch sharingText {
    case "private": permissions = .private
    case "groupShared": permissions = .groupShared
    default: throw .unreadable("'sharing' is neither private nor groupShared")
    }
    var settings = AppGroupMailboxSettings(
      limits: AppGroupMailboxLimits(
        maxMessages: maxMessages, maxPayloadBytes: maxPayloadBytes, messageLifetime: lifetime,
        maxQuarantinedFiles: quarantined, maxDeliveryAttempts: attempts),
      overflowPolicy: policy, permissions: permissions)
    if format >= 2 {
      // A JSON `true` or `false` only (objCType "c"), not a number that bridges to Bool.
      guard let held = object["held"] as? NSNumber, String(cString: held.objCType) == "c"
      else { throw .unreadable("'held' is missing or not true or false (format 2)") }
      settings.isHeld = held.boolValue
    }
    settings.largestPayloadBytes = max(
      maxPayloadBytes,
      min(integer("largestPayloadBytes") ?? 0, AppGroupMailboxLimits.payloadCeiling))
    do {
      try settings.validate()
    } catch AppGroupMailboxError.invalidLimit(let name) {
      throw .unreadable("'\(name)' is out of range")
    } catch {
      throw .unreadable("a limit is out of range")
    }
    // A member is known by its name with escapes undone (`members`); the text kept runs from
    // its name's opening quote to the end of its value, as the file has it.
    let known = Set(Self.knownMembers.compactMap { members[$0]?.lowerBound })
    var others: [UInt8] = []
    for member in listed where !known.contains(member.value.lowerBound) {
      if !others.isEmpty { others.append(UInt8(ascii: ",")) }
      // A raw line break can only be space between tokens (strings escape theirs): kept as a
      // space, so the file stays one line.
      others += bytes[(member.name.lowerBound - 1)..<member.value.upperBound].map {
        $0 == 0x0A || $0 == 0x0D ? UInt8(ascii: " ") : $0
      }
    }
    return Decoded(settings: settings, otherMembers: others)
  }
}
