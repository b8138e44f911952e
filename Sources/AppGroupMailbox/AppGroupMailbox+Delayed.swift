public import Foundation

extension AppGroupMailbox {
  /// Adds a message that cannot be claimed before `notBefore` (a Linux addition).
  ///
  /// Until then it waits in the namespace's `delayed/` area: it is not pending (a consumer or a
  /// systemd `DirectoryNotEmpty=` unit on `pending/` sees nothing), but it counts toward
  /// ``Limits/maxMessages``. When due, any operation of any process (an enqueue, a claim,
  /// maintenance) moves it into line at its due time. ``Limits/messageLifetime`` still counts from
  /// its `enqueuedAt` (now): if `notBefore` lies past its lifetime it expires at once (nothing is
  /// written; ``Diagnostic/expiredMessageRemoved``). A `notBefore` not in the future is a plain
  /// enqueue. When due, it joins the line of its `priority` (as ``enqueue(_:priority:)``).
  /// - Returns: The new message id.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `notBefore` and the accepted range when
  ///   it lies outside ``AppGroupRawMailbox/representableDates`` or is NaN (nothing written);
  ///   otherwise as ``enqueue(_:priority:)``.
  @discardableResult
  public func enqueue(
    _ message: Message, notBefore: Date, priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try enqueue(message, id: nil, due: .notBefore(notBefore), priority: priority)
  }

  /// Adds a message that cannot be claimed for `delay` seconds; see ``enqueue(_:notBefore:priority:)``.
  /// A `delay` of 0 or less is a plain enqueue; one reaching past the last representable
  /// instant (2286, up to infinity) is clamped to it, so the message expires by its lifetime
  /// instead of becoming claimable.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `delay` when it is NaN (nothing
  ///   written); otherwise as ``enqueue(_:priority:)``.
  @discardableResult
  public func enqueue(
    _ message: Message, delay: TimeInterval, priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try enqueue(message, id: nil, due: .delay(delay), priority: priority)
  }

  /// Adds a message with a caller-chosen id that cannot be claimed before `notBefore`; writes
  /// nothing while that id is pending, delayed, claimed or quarantined. See
  /// ``enqueue(_:notBefore:priority:)`` and ``enqueue(_:id:priority:)``.
  /// - Throws: as ``enqueue(_:priority:)``.
  /// - Complexity: O(n) in the entries of the namespace (the duplicate check reads names).
  @discardableResult
  public func enqueue(
    _ message: Message, id: UUID, notBefore: Date,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try enqueue(message, id: id, due: .notBefore(notBefore), priority: priority)
  }

  /// The delayed enqueue every variant above calls: a fresh random id when `id` is nil, else
  /// `id`, written only when no message with it is present.
  func enqueue(_ message: Message, id: UUID?, due: DueTime, priority: Int) throws -> UUID {
    try enqueue(
      message, id: id ?? KernelRandom.messageID(), explicitMicros: nil, unique: id != nil, due: due,
      priority: priority)
  }
}
