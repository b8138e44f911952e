import AppGroupMailbox
import Foundation
import MailboxLocks

/// Prints one line for each dead letter a command's claims quarantine, naming the message id
/// and the reason: `drain: message ID: dead letter after N deliveries (the mailbox's
/// maxDeliveryAttempts); moved to quarantine as FILE`. The library's diagnostic carries no id,
/// so the line is built from the quarantine listing (names only, never contents).
final class DeadLetterReport: Sendable {
  private let location: MailboxOptions.Location
  private let command: String
  private let printed = Locked<Set<String>>([])
  /// Ids a handler dead-lettered itself (`drain --coprocess`): reported by the caller with the
  /// handler's reason, never as the mailbox's `maxDeliveryAttempts`.
  private let chosen = Locked<Set<UUID>>([])

  init(_ location: MailboxOptions.Location, command: String) {
    self.location = location
    self.command = command
    // Dead letters already in quarantine are not this run's.
    printed.withLock { $0 = Set(self.deadLetters().map(\.fileName)) }
  }

  /// Call before moving the message `id` to quarantine at a handler's request.
  func handlerChose(_ id: UUID) {
    chosen.withLock { _ = $0.insert(id) }
  }

  /// Call with each diagnostic; prints the new dead letters on `.deadLetterQuarantined`.
  func record(_ event: AppGroupMailboxDiagnostic) {
    guard event == .deadLetterQuarantined else { return }
    let inspector = try? AppGroupMailboxInspector(
      containerURL: location.container, namespace: location.namespace)
    let attempts = inspector?.settings.maxDeliveryAttempts
    let count = attempts.map { "\($0) deliver" + ($0 == 1 ? "y" : "ies") } ?? "its deliveries"
    for entry in deadLetters() {
      guard printed.withLock({ $0.insert(entry.fileName).inserted }) else { continue }
      if let id = entry.id, chosen.withLock({ $0.contains(id) }) { continue }
      let id = entry.id?.uuidString.lowercased() ?? "unknown"
      Output.note(
        "\(command): message \(id): dead letter after \(count) (the mailbox's "
          + "maxDeliveryAttempts); moved to quarantine as \(entry.fileName)")
    }
  }

  private func deadLetters() -> [AppGroupMailboxEntry] {
    guard
      let inspector = try? AppGroupMailboxInspector(
        containerURL: location.container, namespace: location.namespace),
      let entries = try? inspector.entries(in: [.quarantined])
    else { return [] }
    return entries.filter { $0.quarantineReason == "deadletter" }
  }
}
