import Foundation

extension ClaimedName {
  /// The claim of the pending entry `pendingFileName`, the canonical name of `pending` (as
  /// ``PendingName/fileName`` formats it): its bytes up to the attempts field are copied rather
  /// than formatted again (a claim formats the pending name anyway, to rename it). The result
  /// equals ``init(message:token:leaseUntilMicros:)`` with `pending`'s attempts plus one.
  init(
    claiming pending: PendingName, named pendingFileName: String, token: UInt64,
    leaseUntilMicros: Int64
  ) {
    let message = PendingName(key: pending.key, id: pending.id, attempts: pending.attempts + 1)
    let lease = max(0, min(leaseUntilMicros, MessageKey.maxMicros))
    var name: String?
    pendingFileName.utf8.withContiguousStorageIfAvailable { source in
      // `<stem without attempts>-<attempts>.msg`: keep everything through the last `-`.
      guard let dash = source.lastIndex(of: UInt8(ascii: "-")) else { return }
      var bytes: [UInt8] = []
      bytes.reserveCapacity(dash + 1 + 10 + 1 + 16 + 1 + 16 + Self.suffix.utf8.count)
      bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[...dash]))
      NameBytes.decimal(UInt64(max(0, message.attempts)), width: 1, into: &bytes)
      Self.appendTail(token, lease, into: &bytes)
      name = String(decoding: bytes, as: UTF8.self)
    }
    if let name {
      self.init(message: message, token: token, leaseUntilMicros: lease, fileName: name)
    } else {
      self.init(message: message, token: token, leaseUntilMicros: lease)
    }
  }
}
