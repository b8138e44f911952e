public import Foundation

extension AppGroupMailbox {
  /// Adds `messages` in order under fresh random ids, holding the namespace lock once and
  /// flushing the pending directory once for the whole batch (a Linux addition).
  ///
  /// Each message is written and, at ``Durability/full``, flushed (fsync(2)) to its own file in
  /// `tmp/`; then all are renamed into `pending/` under one hold of the lock, and `pending/` is
  /// flushed once before this returns, so the whole batch survives a crash or power loss once
  /// this returns. The messages share one `enqueuedAt` (now, clamped as for ``enqueue(_:priority:)``) and
  /// keep their order, all at `priority` (0 to 9, default 5; as ``enqueue(_:priority:)``).
  /// Consumers may see the first messages of a batch before the last ones
  /// appear, but never a partial message. An empty array does nothing and returns `[]`.
  ///
  /// - Returns: The ids of the messages, in order.
  /// - Throws: ``MailboxError/invalidLimit(_:)`` naming `priority` for a level outside 0 to 9;
  ///   ``MailboxError/encodingFailure`` or
  ///   ``MailboxError/payloadTooLarge(actualBytes:maximumBytes:)`` for any message, before
  ///   anything is written; ``MailboxError/mailboxFull`` when the batch does not fit (with
  ///   ``OverflowPolicy/rejectNewest``, or with `discardOldest` when claimed messages leave too
  ///   little room, or the batch is larger than ``Limits/maxMessages``), with nothing
  ///   published; ``MailboxError/ioFailure(_:)``, in which case the messages renamed before the
  ///   failure stay published (at most the whole batch, never a partial message).
  /// - Complexity: O(k) system calls for k messages, about 3 fewer per message than k calls of
  ///   ``enqueue(_:priority:)`` plus one directory flush instead of k; O(n) in the depth only when the
  ///   depth counter says the batch does not fit.
  ///
  /// Thread and process safety: as ``enqueue(_:priority:)``.
  @discardableResult
  public func enqueue(
    contentsOf messages: [Message], priority: Int = AppGroupMailboxPriority.default
  ) throws -> [UUID] {
    let level = try AppGroupMailboxPriority.validated(priority)
    guard !messages.isEmpty else { return [] }
    let encoder = JSONEncoder()
    let payloads: [Data]
    do {
      payloads = try messages.map { try encoder.encode($0) }
    } catch {
      throw MailboxError.encodingFailure
    }
    let ids = messages.map { _ in KernelRandom.messageID() }
    var diagnostics: [Diagnostic] = []
    defer { spool.emit(diagnostics) }
    try spool.sweepIfDue(diagnostics: &diagnostics)
    let published = try spool.enqueueBatch(
      payloads: payloads, ids: ids, messageType: messageType, payloadVersion: payloadVersion,
      level: level,
      diagnostics: &diagnostics)
    if published > 0 { spool.configuration.onPending?() }
    return ids
  }
}
