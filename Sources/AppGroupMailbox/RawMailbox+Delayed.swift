public import Foundation

extension AppGroupRawMailbox {
  /// Adds one message whose encoded JSON is `payload` and that cannot be claimed before
  /// `notBefore` (a Linux addition), as ``AppGroupMailbox/enqueue(_:notBefore:priority:)`` does.
  ///
  /// Until then it waits in the namespace's `delayed/` area: not pending (a consumer or a
  /// systemd `DirectoryNotEmpty=` unit on `pending/` sees nothing), but counting toward
  /// ``Limits/maxMessages``. When due, any operation of any process moves it into line at its
  /// due time. ``Limits/messageLifetime`` still counts from its `enqueuedAt`: when `notBefore`
  /// lies past its lifetime it expires at once and nothing is written
  /// (``Receipt/expiredBeforeDue``). A `notBefore` not in the future is a plain enqueue.
  /// - Parameters:
  ///   - payload: One JSON value, stored byte for byte.
  ///   - id: A caller-chosen id (nothing is written while it is pending, delayed, claimed or
  ///     quarantined); nil means a fresh random id.
  ///   - enqueuedAt: The message's `enqueuedAt` (where its lifetime starts); nil means now.
  ///     Its place in line is its due time either way.
  ///   - notBefore: When it becomes claimable (microsecond precision); a date outside
  ///     ``representableDates`` or NaN is refused with ``AppGroupMailboxError/invalidLimit(_:)``
  ///     naming `notBefore` and the range, nothing written.
  ///   - messageType: The stored type tag; empty (the default) is untyped.
  ///   - payloadVersion: The version of the message's encoded form (default 1), as
  ///     ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``.
  ///   - priority: The level (0 to 9, default 5) the message has when due, as
  ///     ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``.
  /// - Returns: The receipt; ``Receipt/notBefore`` is set when the message waits in `delayed/`.
  /// - Throws: as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``.
  /// - Complexity: as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``.
  @discardableResult
  public func enqueue(
    _ payload: Data, id: UUID? = nil, enqueuedAt: Date? = nil, notBefore: Date,
    messageType: String = "", payloadVersion: Int = 1,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> Receipt {
    try enqueue(
      payload, id: id, enqueuedAt: enqueuedAt, due: .notBefore(notBefore),
      messageType: messageType, payloadVersion: payloadVersion, priority: priority)
  }

  /// Adds a message that cannot be claimed for `delay` seconds from now; see
  /// ``enqueue(_:id:enqueuedAt:notBefore:messageType:payloadVersion:priority:)``. A `delay` of 0 or less is a plain
  /// enqueue; one reaching past the last representable instant (up to infinity) is clamped to
  /// it; NaN is refused with ``AppGroupMailboxError/invalidLimit(_:)`` naming `delay`.
  /// - Throws: as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)``.
  @discardableResult
  public func enqueue(
    _ payload: Data, id: UUID? = nil, enqueuedAt: Date? = nil, delay: TimeInterval,
    messageType: String = "", payloadVersion: Int = 1,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> Receipt {
    try enqueue(
      payload, id: id, enqueuedAt: enqueuedAt, due: .delay(delay), messageType: messageType,
      payloadVersion: payloadVersion, priority: priority)
  }
}
