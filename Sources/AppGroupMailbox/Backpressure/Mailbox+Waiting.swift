public import Foundation

extension AppGroupMailbox {
  /// Adds a message as ``enqueue(_:priority:)`` does, but when the mailbox is full waits up to
  /// `timeout` seconds for room instead of failing: woken when a message leaves (a claim
  /// acknowledged, a message expired, discarded, quarantined or cancelled) through inotify, and
  /// checking again at least every second. The same FIFO and id rules apply: the message's place in
  /// line is the time it is stored. Producers waiting together are not served in any order.
  /// Blocks the calling thread; do not call it from a Swift concurrency task.
  ///
  /// - Parameters:
  ///   - timeout: Seconds to wait for room; 0 or less tries once, +infinity waits without limit.
  ///   - priority: The level, 0 to 9 (default 5), as ``enqueue(_:priority:)``.
  /// - Throws: ``MailboxError/mailboxFull`` when no room appeared in time; ``MailboxError/invalidLimit(_:)``
  ///   (`"timeout"`); the other errors of ``enqueue(_:priority:)``.
  @discardableResult
  public func enqueue(
    _ message: Message, waitingUpTo timeout: TimeInterval,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> UUID {
    try spool.waitingForRoom(timeout) { try enqueue(message, priority: priority) }
  }
}

extension AppGroupRawMailbox {
  /// Adds one message as ``enqueue(_:id:enqueuedAt:messageType:payloadVersion:priority:)`` does, waiting up to
  /// `timeout` seconds for room when the mailbox is full; see
  /// ``AppGroupMailbox/enqueue(_:waitingUpTo:priority:)``.
  @discardableResult
  public func enqueue(
    _ payload: Data, id: UUID? = nil, enqueuedAt: Date? = nil, messageType: String = "",
    payloadVersion: Int = 1, waitingUpTo timeout: TimeInterval,
    priority: Int = AppGroupMailboxPriority.default
  ) throws -> Receipt {
    try waitingForRoom(upTo: timeout) {
      try enqueue(
        payload, id: id, enqueuedAt: enqueuedAt, messageType: messageType,
        payloadVersion: payloadVersion, priority: priority)
    }
  }

  /// Runs `attempt` (an enqueue of any kind), and while it throws
  /// ``AppGroupMailboxError/mailboxFull`` waits for room as
  /// ``AppGroupMailbox/enqueue(_:waitingUpTo:priority:)`` does and runs it again, up to `timeout`
  /// seconds. Blocks the calling thread.
  /// - Throws: ``AppGroupMailboxError/mailboxFull`` when no room appeared in time;
  ///   ``AppGroupMailboxError/invalidLimit(_:)`` (`"timeout"`); what `attempt` throws.
  public func waitingForRoom<T>(upTo timeout: TimeInterval, _ attempt: () throws -> T) throws
    -> T
  {
    try spool.waitingForRoom(timeout, attempt)
  }
}
