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
  /// This run's dead letters still in quarantine: file name to message id.
  private let moved = Locked<[String: String]>([:])
  /// Dead letters the library reported less those the listings have shown: negative when a
  /// listing showed dead letters whose diagnostics have not come yet (one listing shows what
  /// the whole operation did).
  private let unnamed = Locked(0)

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

  /// Call with each diagnostic (in order). On `.deadLetterQuarantined` and
  /// `.quarantinedFileDiscarded` it lists the quarantine and prints: each dead letter of this
  /// run the quarantine bound deleted since it was shown (`… was deleted from quarantine, which
  /// keeps at most N files`), each new dead letter (`… moved to quarantine as FILE`), and, for
  /// a dead letter that left no file to name (quarantine keeps nothing, or trimmed it before
  /// this listing, as one claim that makes several does), a line saying it was deleted.
  /// Diagnostics come after the operation that made them, so a listing shows its end state.
  func record(_ event: AppGroupMailboxDiagnostic) {
    switch event {
    case .deadLetterQuarantined: unnamed.withLock { $0 += 1 }
    case .quarantinedFileDiscarded: break
    default: return
    }
    let inspector = try? AppGroupMailboxInspector(
      containerURL: location.container, namespace: location.namespace)
    let kept = inspector?.settings.maxQuarantinedFiles
    let bound =
      "keeps at most \(kept.map(String.init) ?? "its bound of") files (maxQuarantinedFiles)"
    let current = deadLetters()
    let names = Set(current.map(\.fileName))
    let gone = moved.withLock { moved in
      let gone = moved.filter { !names.contains($0.key) }
      for file in gone.keys { moved[file] = nil }
      return gone
    }
    for (file, id) in gone.sorted(by: { $0.key < $1.key }) {
      Output.note(
        "\(command): message \(id): dead letter \(file) was deleted from quarantine, which "
          + bound)
    }
    let attempts = inspector?.settings.maxDeliveryAttempts
    let count = attempts.map { "\($0) deliver" + ($0 == 1 ? "y" : "ies") } ?? "its deliveries"
    var found = false
    for entry in current {
      guard printed.withLock({ $0.insert(entry.fileName).inserted }) else { continue }
      found = true
      unnamed.withLock { $0 -= 1 }
      let id = entry.id?.uuidString.lowercased() ?? "unknown"
      moved.withLock { $0[entry.fileName] = id }
      if let id = entry.id, chosen.withLock({ $0.contains(id) }) { continue }
      Output.note(
        "\(command): message \(id): dead letter after \(count) (the mailbox's "
          + "maxDeliveryAttempts); moved to quarantine as \(entry.fileName)")
    }
    guard event == .deadLetterQuarantined, !found,
      unnamed.withLock({ left in
        guard left > 0 else { return false }
        left -= 1
        return true
      })
    else { return }
    Output.note(
      kept == 0
        ? "\(command): a dead letter was deleted, not quarantined: the mailbox keeps no "
          + "quarantined files (maxQuarantinedFiles 0)"
        : "\(command): a dead letter was deleted from quarantine before its name could be "
          + "shown: quarantine \(bound)")
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
