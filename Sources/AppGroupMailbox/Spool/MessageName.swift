import Foundation

/// The ordering key of a message: its priority level (higher first), then `enqueuedAt` in
/// microseconds since the Unix epoch, then the namespace's insertion sequence. Within one level,
/// sorting names as text sorts keys, because both numbers are fixed width.
struct MessageKey: Comparable, Hashable, Sendable {
  var micros: Int64
  var sequence: UInt64
  /// The priority level, ``AppGroupMailboxPriority/lowest`` to ``AppGroupMailboxPriority/highest``;
  /// a name without a level prefix has ``AppGroupMailboxPriority/default``.
  var level: Int = AppGroupMailboxPriority.default

  /// Claim order: the higher level first, then FIFO (`enqueuedAt`, then `sequence`).
  @inline(__always)
  static func < (lhs: Self, rhs: Self) -> Bool {
    if lhs.level != rhs.level { return lhs.level > rhs.level }
    return (lhs.micros, lhs.sequence) < (rhs.micros, rhs.sequence)
  }

  /// The latest time a name can hold: 16 decimal digits of microseconds (year 2286).
  static let maxMicros: Int64 = 9_999_999_999_999_999
}

/// The name of a pending message: `<micros:16>-<sequence:20>-<uuid>-<attempts>.msg`, all digits
/// decimal and zero-padded, the UUID in lower case; `attempts` is how many times the message has
/// been claimed so far (0 for a new message). A message of a level other than
/// ``AppGroupMailboxPriority/default`` has the prefix `p<level>-` (one digit); the default level
/// has none, so its names are those of spools written before levels. See docs/FORMAT.md.
struct PendingName: Hashable, Sendable {
  var key: MessageKey
  var id: UUID
  var attempts: Int

  static let suffix = ".msg"

  /// The largest delivery count a name holds (`Int32.max`); a message claimed that often is a
  /// dead letter whatever ``AppGroupMailboxLimits/maxDeliveryAttempts`` says, so no claimed name
  /// can overflow the field.
  static let maxAttempts = Int(Int32.max)

  var fileName: String {
    var bytes: [UInt8] = []
    Self.stem(key, id, attempts, into: &bytes)
    bytes.append(contentsOf: Self.suffix.utf8)
    return String(decoding: bytes, as: UTF8.self)
  }

  static func stem(_ key: MessageKey, _ id: UUID, _ attempts: Int) -> String {
    var bytes: [UInt8] = []
    stem(key, id, attempts, into: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Appends the stem's bytes (see ``NameBytes``).
  static func stem(_ key: MessageKey, _ id: UUID, _ attempts: Int, into bytes: inout [UInt8]) {
    bytes.reserveCapacity(bytes.count + 128)
    if key.level != AppGroupMailboxPriority.default {
      bytes.append(UInt8(ascii: "p"))
      bytes.append(UInt8(ascii: "0") + UInt8(clamping: max(0, min(key.level, 9))))
      bytes.append(UInt8(ascii: "-"))
    }
    NameBytes.decimal(UInt64(max(0, key.micros)), width: 16, into: &bytes)
    bytes.append(UInt8(ascii: "-"))
    NameBytes.decimal(key.sequence, width: 20, into: &bytes)
    bytes.append(UInt8(ascii: "-"))
    NameBytes.uuid(id, into: &bytes)
    bytes.append(UInt8(ascii: "-"))
    NameBytes.decimal(UInt64(max(0, attempts)), width: 1, into: &bytes)
  }

  /// Parses a pending name; nil for anything else (temporary names, foreign files).
  init?(parsing name: String) {
    let parsed =
      name.utf8.withContiguousStorageIfAvailable { Self(bytes: $0) }
      ?? Array(name.utf8).withUnsafeBufferPointer { Self(bytes: $0) }
    guard let parsed else { return nil }
    self = parsed
  }

  /// Parses a pending name from its bytes (as a listing or an inotify event reports them, without
  /// a NUL); nil for anything else. Allocates nothing: a first claim parses every pending name.
  init?(bytes: UnsafeBufferPointer<UInt8>) {
    let stem = bytes.count - 4
    guard stem > 0, bytes[stem] == UInt8(ascii: "."), bytes[stem + 1] == UInt8(ascii: "m"),
      bytes[stem + 2] == UInt8(ascii: "s"), bytes[stem + 3] == UInt8(ascii: "g"),
      let parsed = Self.parseStem(UnsafeBufferPointer(rebasing: bytes[..<stem]))
    else { return nil }
    self = parsed
  }

  init(key: MessageKey, id: UUID, attempts: Int) {
    self.key = key
    self.id = id
    self.attempts = attempts
  }

  /// Parses `[p<level>-]<micros:16>-<sequence:20>-<uuid:36>-<attempts>`; a level prefix with
  /// the default level is not canonical and does not parse (every parsed name formats back to
  /// the same bytes).
  static func parseStem(_ stem: UnsafeBufferPointer<UInt8>) -> PendingName? {
    var level = AppGroupMailboxPriority.default
    var bytes = stem
    if stem.first == UInt8(ascii: "p") {
      guard stem.count > 3, stem[2] == UInt8(ascii: "-"),
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(stem[1])
      else { return nil }
      level = Int(stem[1] - UInt8(ascii: "0"))
      guard AppGroupMailboxPriority.levels.contains(level),
        level != AppGroupMailboxPriority.default
      else { return nil }
      bytes = UnsafeBufferPointer(rebasing: stem[3...])
    }
    // 16 + 1 + 20 + 1 + 36 + 1 + 1 to 10 digits (up to maxAttempts).
    let count = bytes.count
    guard count >= 76, count <= 85 else { return nil }
    guard bytes[16] == UInt8(ascii: "-"), bytes[37] == UInt8(ascii: "-"),
      bytes[74] == UInt8(ascii: "-")
    else { return nil }
    guard let micros = digits(bytes, 0..<16), let sequence = digits(bytes, 17..<37),
      let attempts = digits(bytes, 75..<count), attempts <= UInt64(maxAttempts)
    else { return nil }
    guard bytes[75] != UInt8(ascii: "0") || count == 76 else { return nil }
    guard
      let id = NameBytes.parseUUID(
        UnsafeBufferPointer(rebasing: bytes[38..<74]), lowercaseOnly: true)
    else { return nil }
    return PendingName(
      key: MessageKey(micros: Int64(micros), sequence: sequence, level: level), id: id,
      attempts: Int(attempts))
  }

  /// The value of the decimal digits at `range` of `bytes` (1 to 20 of them); nil for anything
  /// else or on overflow. The parsers' fast path: no generic collection, no allocation.
  @inline(__always)
  static func digits(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt64? {
    guard !range.isEmpty, range.count <= 20 else { return nil }
    var value: UInt64 = 0
    var largest: UInt8 = 0
    // At most 19 digits cannot overflow; a 20th is added with a check.
    let last = min(range.upperBound, range.lowerBound + 19)
    for index in range.lowerBound..<last {
      let digit = bytes[index] &- UInt8(ascii: "0")
      largest = max(largest, digit)
      value = value &* 10 &+ UInt64(digit)
    }
    guard largest < 10 else { return nil }
    if last < range.upperBound {
      let digit = bytes[last] &- UInt8(ascii: "0")
      guard digit < 10 else { return nil }
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
      guard !overflow1, !overflow2 else { return nil }
      value = sum
    }
    return value
  }

  /// The value of 1 to 20 decimal digits; nil for anything else or on overflow.
  static func digits<C: Collection<UInt8>>(_ bytes: C) -> UInt64? {
    guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
    var value: UInt64 = 0
    for byte in bytes {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      guard !overflow1, !overflow2 else { return nil }
      value = sum
    }
    return value
  }

  static func pad(_ value: UInt64, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
  }
}

/// The name of a claimed message: `<pending stem with attempts counting this delivery>.<token:16
/// hex>.<lease deadline micros:16>.claim`. The random token makes every claim's name unique, so a
/// stale holder can never act on a newer claim of the same message; the lease deadline lets any
/// process see an abandoned claim from the name alone. A renewal renames to a new deadline.
struct ClaimedName: Hashable, Sendable {
  /// The message as it returns to pending on release or recovery (attempts already counted).
  var message: PendingName { didSet { fileName = Self.format(message, token, leaseUntilMicros) } }
  var token: UInt64 { didSet { fileName = Self.format(message, token, leaseUntilMicros) } }
  var leaseUntilMicros: Int64 {
    didSet { fileName = Self.format(message, token, leaseUntilMicros) }
  }
  /// The file name, formatted once per change (a claim uses it four times).
  private(set) var fileName: String

  static let suffix = ".claim"

  private static func format(_ message: PendingName, _ token: UInt64, _ leaseUntilMicros: Int64)
    -> String
  {
    var bytes: [UInt8] = []
    PendingName.stem(message.key, message.id, message.attempts, into: &bytes)
    appendTail(token, leaseUntilMicros, into: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Appends `.<token>.<lease>.claim`, what follows the stem.
  static func appendTail(_ token: UInt64, _ leaseUntilMicros: Int64, into bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "."))
    NameBytes.hex(token, width: 16, into: &bytes)
    bytes.append(UInt8(ascii: "."))
    NameBytes.decimal(UInt64(max(0, leaseUntilMicros)), width: 16, into: &bytes)
    bytes.append(contentsOf: Self.suffix.utf8)
  }

  init(message: PendingName, token: UInt64, leaseUntilMicros: Int64) {
    let lease = max(0, min(leaseUntilMicros, MessageKey.maxMicros))
    self.init(
      message: message, token: token, leaseUntilMicros: lease,
      fileName: Self.format(message, token, lease))
  }

  /// Sets every field as given: `fileName` must be the name the other three format to.
  init(message: PendingName, token: UInt64, leaseUntilMicros: Int64, fileName: String) {
    self.message = message
    self.token = token
    self.leaseUntilMicros = leaseUntilMicros
    self.fileName = fileName
  }

  init?(parsing name: String) {
    guard name.hasSuffix(Self.suffix) else { return nil }
    let body = name.utf8.dropLast(Self.suffix.utf8.count)
    let bytes = Array(body)
    // [p<level>-] stem . token(16) . lease(16)
    guard bytes.count >= 76 + 34 else { return nil }
    let leaseStart = bytes.count - 16
    let tokenStart = leaseStart - 17
    guard bytes[leaseStart - 1] == UInt8(ascii: "."), bytes[tokenStart - 1] == UInt8(ascii: ".")
    else { return nil }
    guard let lease = PendingName.digits(bytes[leaseStart...]),
      let token = NameBytes.parseHex(bytes[tokenStart..<(leaseStart - 1)], width: 16)
    else { return nil }
    guard
      let message = bytes.withUnsafeBufferPointer({
        PendingName.parseStem(UnsafeBufferPointer(rebasing: $0[..<(tokenStart - 1)]))
      })
    else { return nil }
    self.init(message: message, token: token, leaseUntilMicros: Int64(lease))
  }
}

/// Why a file was quarantined; part of its quarantine name.
enum QuarantineReason: String, Sendable, CaseIterable {
  /// Not a regular file, or more than one link.
  case unsafe
  /// Empty, truncated, not an envelope, or a message that does not decode.
  case malformed
  /// Larger than the payload limit.
  case oversized
  /// An envelope format newer than this build reads.
  case future
  /// A `messageType` other than the consumer's: written by earlier versions only (a message of
  /// another type now stays pending; see ``MessageTypeTag``), still parsed.
  case wrongtype
  /// Claimed `maxDeliveryAttempts` times without an acknowledge, or as often as a name can
  /// count (``PendingName/maxAttempts``).
  case deadletter
  /// An entry in `pending/` whose name is not a message name (see docs/SECURITY.md).
  case foreign
  /// A second, different entry under a name a move needed, moved aside by the move policy (see
  /// ``Spool/move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)``).
  case conflict

  var diagnostic: AppGroupMailboxDiagnostic {
    switch self {
    case .unsafe, .foreign, .conflict: .unsafeFileQuarantined
    case .deadletter: .deadLetterQuarantined
    default: .malformedMessageQuarantined
    }
  }
}

/// The name of a quarantined file: `<quarantined micros:16>-<reason>-<uuid or "unknown">-<random
/// 8 hex>.q`; unique, sortable by quarantine time, listing id and reason without reading it.
struct QuarantineName: Hashable, Sendable {
  var micros: Int64
  var reason: QuarantineReason
  var id: UUID?
  var nonce: UInt32

  var fileName: String {
    let nonce = String(self.nonce, radix: 16)
    return PendingName.pad(UInt64(max(0, micros)), 16) + "-" + reason.rawValue + "-"
      + (id?.uuidString.lowercased() ?? "unknown") + "-"
      + String(repeating: "0", count: 8 - nonce.count) + nonce + ".q"
  }

  init(micros: Int64, reason: QuarantineReason, id: UUID?, nonce: UInt32) {
    self.micros = micros
    self.reason = reason
    self.id = id
    self.nonce = nonce
  }

  init?(parsing name: String) {
    guard name.hasSuffix(".q") else { return nil }
    let parts = name.dropLast(2).split(separator: "-", maxSplits: 2)
    guard parts.count == 3, let micros = PendingName.digits(ArraySlice(parts[0].utf8)),
      parts[0].utf8.count == 16
    else { return nil }
    let rest = parts[2]
    guard let reason = QuarantineReason(rawValue: String(parts[1])), rest.utf8.count >= 9 else {
      return nil
    }
    let idText = rest.dropLast(9)
    // Either case, as before and as interop/python; never a sign.
    guard let nonce = NameBytes.parseHex(rest.utf8.suffix(8).map(NameBytes.lowercased), width: 8)
    else {
      return nil
    }
    self.micros = Int64(micros)
    self.reason = reason
    self.id = idText == "unknown" ? nil : UUID(uuidString: String(idText))
    self.nonce = UInt32(nonce)
  }
}

/// The name of a message that is not due yet, in `delayed/`: `<due micros:16>-<pending name>`.
/// The pending name is the one it takes when due: a message released with a delay keeps its
/// original key (so it returns to its original place); a delayed enqueue's key is its due time
/// (so it joins the line then). Sorting names as text sorts by due time.
struct DelayedName: Hashable, Sendable {
  var dueMicros: Int64
  var message: PendingName

  var fileName: String { PendingName.pad(UInt64(max(0, dueMicros)), 16) + "-" + message.fileName }

  init(dueMicros: Int64, message: PendingName) {
    self.dueMicros = max(0, min(dueMicros, MessageKey.maxMicros))
    self.message = message
  }

  init?(parsing name: String) {
    let bytes = name.utf8
    guard bytes.count > 17, let due = PendingName.digits(ArraySlice(bytes.prefix(16))),
      bytes.dropFirst(16).first == UInt8(ascii: "-"),
      let message = PendingName(parsing: String(decoding: bytes.dropFirst(17), as: UTF8.self))
    else { return nil }
    self.init(dueMicros: Int64(due), message: message)
  }
}
