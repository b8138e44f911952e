import AppGroupMailbox
import Foundation

/// What a settings change means for what the mailbox already holds, which `config` says on
/// stderr: lowering a bound deletes nothing by itself, but what is there meets the new bound
/// at the next operation of any process, and that may delete messages.
enum SettingsConsequences {
  /// One sentence for each lowered bound that what the mailbox holds is over: messages older
  /// than a shorter lifetime (by the time in their names: a delayed message's is its due time,
  /// so it is not counted), a quarantine over its new bound, a depth over a lower
  /// `maxMessages` (or over the bound when the overflow policy becomes discard-oldest, which
  /// then deletes), messages delivered as often as a lower `maxDeliveryAttempts`. None when no
  /// bound was lowered nor discard-oldest chosen, or when the areas cannot be listed (the change
  /// itself was made).
  /// - Complexity: one listing of the four areas, O(n), only when a bound was lowered or
  ///   discard-oldest chosen.
  static func notes(
    _ mailbox: AppGroupRawMailbox, before: AppGroupMailboxSettings,
    after: AppGroupMailboxSettings
  ) -> [String] {
    let shorterLifetime = after.messageLifetime < before.messageLifetime
    let smallerQuarantine = after.maxQuarantinedFiles < before.maxQuarantinedFiles
    let lowerDepth = after.maxMessages < before.maxMessages
    let fewerDeliveries = (after.maxDeliveryAttempts ?? .max) < (before.maxDeliveryAttempts ?? .max)
    // A mailbox over its bound (lowered before, or messages moved in by hand) that now evicts.
    let nowDiscarding =
      after.overflowPolicy == .discardOldest && before.overflowPolicy != after.overflowPolicy
    guard shorterLifetime || smallerQuarantine || lowerDepth || fewerDeliveries || nowDiscarding,
      let entries = try? mailbox.inspector.entries(in: [.pending, .claimed, .delayed, .quarantined])
    else { return [] }
    let messages = entries.filter { $0.state != .quarantined }
    var notes: [String] = []
    if shorterLifetime {
      // Claimed messages are their holders' until acknowledged, released or recovered.
      let cutoff = Date().addingTimeInterval(-after.messageLifetime)
      let old = messages.filter {
        $0.state != .claimed && ($0.enqueuedAt ?? .distantFuture) <= cutoff
      }.count
      if old > 0 {
        notes.append(
          "\(Output.counted(old, "message")) waiting to be claimed \(old == 1 ? "was" : "were") "
            + "enqueued more than \(Output.seconds(after.messageLifetime)) s ago: the "
            + "next claim or maintain deletes \(old == 1 ? "it" : "them") as expired, undelivered")
      }
    }
    let quarantined = entries.count - messages.count
    if smallerQuarantine, quarantined > after.maxQuarantinedFiles {
      // With a bound of 0 nothing is quarantined any more (deleted instead), so only maintain
      // trims.
      let when = after.maxQuarantinedFiles == 0 ? "maintain" : "quarantine or maintain"
      notes.append(
        "quarantine holds \(Output.counted(quarantined, "file")), over the new bound of "
          + "\(after.maxQuarantinedFiles): the next \(when) deletes the oldest "
          + "\(quarantined - after.maxQuarantinedFiles)")
    }
    if lowerDepth || nowDiscarding, messages.count > after.maxMessages {
      // Room for one more: discard-oldest deletes only pending messages, and nothing when
      // deleting every one it may would not make that room.
      let needed = messages.count - after.maxMessages + 1
      let pending = messages.filter { $0.state == .pending }.count
      let consequence =
        after.overflowPolicy == .rejectNewest
        ? "enqueues are refused until consumers bring it under (overflow reject-newest)"
        : needed <= pending
          ? "the next enqueue deletes up to \(needed) pending messages, the oldest of its "
            + "priority level or lower first (overflow discard-oldest)"
          : "enqueues are refused until claimed or delayed messages leave: deleting every "
            + "pending message would not make room (overflow discard-oldest)"
      notes.append(
        "the depth (\(messages.count)) is over the \(lowerDepth ? "new " : "")bound of "
          + "\(after.maxMessages): "
          + consequence)
    }
    if fewerDeliveries, let maximum = after.maxDeliveryAttempts {
      let spent = messages.filter {
        $0.state != .claimed && ($0.deliveryCount ?? 0) >= maximum
      }.count
      if spent > 0 {
        notes.append(
          "\(Output.counted(spent, "message")) waiting to be claimed \(spent == 1 ? "was" : "were") "
            + "delivered \(maximum) or more times: at the next claim \(spent == 1 ? "it goes" : "they go") "
            + "to quarantine as \(spent == 1 ? "a dead letter" : "dead letters")")
      }
    }
    return notes
  }
}
