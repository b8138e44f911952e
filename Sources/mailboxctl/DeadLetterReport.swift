import AppGroupMailbox
import Foundation
import MailboxLocks

/// Prints one line for each dead letter a command's claims quarantine, naming the message id
/// and the reason: `drain: message ID: dead letter after N deliveries (the mailbox's
/// maxDeliveryAttempts); moved to quarantine as FILE`. The library's diagnostic carries no id,
/// so the line is built from the quarantine listing (names only, never contents).
final class DeadLetterReport: Sendable {
  private let location: MailboxOptions.Location
  /// The mailbox's inspector, opened at first use that succeeds (its settings and listings are
  /// read afresh on each use).
  private let opened = Locked<AppGroupMailboxInspector?>(nil)
  private let command: String
  private let printed = Locked<Set<String>>([])
  /// Ids a handler dead-lettered itself (`drain --coprocess`): reported by the caller with the
  /// handler's reason, never as the mailbox's `maxDeliveryAttempts`.
  private let chosen = Locked<Set<UUID>>([])
  /// This run's dead letters still in quarantine: file name to message id.
  private let moved = Locked<[String: String]>([:])

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

  /// Call with each diagnostic (in order). On `.deadLetterQuarantined` it prints the dead
  /// letters new in the quarantine listing (`… moved to quarantine as FILE`), or, when the
  /// mailbox keeps no quarantined files, that one was deleted. On `.quarantinedFileDiscarded`
  /// (this process trimmed the quarantine to its bound) it names each dead letter it printed
  /// that is gone (`… was deleted from quarantine, which keeps at most N files`), or says the
  /// oldest file was deleted when none of them is. Diagnostics come after the operation that
  /// made them, so a listing shows its end state; a dead letter made and trimmed by one
  /// operation shows as that second line only. With other processes dead-lettering in the
  /// same mailbox at once, the listing may show theirs too (the diagnostic carries no id).
  func record(_ event: AppGroupMailboxDiagnostic) {
    guard event == .deadLetterQuarantined || event == .quarantinedFileDiscarded else { return }
    let inspector = inspector
    let kept = inspector?.settings.maxQuarantinedFiles
    let bound =
      "keeps at most \(kept.map { Output.counted($0, "file") } ?? "its bound of files") "
      + "(maxQuarantinedFiles)"
    if event == .deadLetterQuarantined, kept == 0 {
      Output.note(
        "\(command): a dead letter was deleted, not quarantined: the mailbox keeps no "
          + "quarantined files (maxQuarantinedFiles 0)")
      return
    }
    let current = deadLetters()
    if event == .quarantinedFileDiscarded {
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
      if gone.isEmpty {
        Output.note("\(command): quarantine was full: its oldest file was deleted; it \(bound)")
      }
      return
    }
    let attempts = inspector?.settings.maxDeliveryAttempts
    let count = attempts.map { "\($0) deliver" + ($0 == 1 ? "y" : "ies") } ?? "its deliveries"
    for entry in current {
      guard printed.withLock({ $0.insert(entry.fileName).inserted }) else { continue }
      let id = entry.id?.uuidString.lowercased() ?? "unknown"
      moved.withLock { $0[entry.fileName] = id }
      if let id = entry.id, chosen.withLock({ $0.contains(id) }) { continue }
      Output.note(
        "\(command): message \(id): dead letter after \(count) (the mailbox's "
          + "maxDeliveryAttempts); moved to quarantine as \(entry.fileName)")
    }
  }

  /// nil while the mailbox cannot be opened (then nothing is reported).
  private var inspector: AppGroupMailboxInspector? {
    opened.withLock { opened in
      if opened == nil {
        opened = try? AppGroupMailboxInspector(
          containerURL: location.container, namespace: location.namespace)
      }
      return opened
    }
  }

  private func deadLetters() -> [AppGroupMailboxEntry] {
    guard let entries = try? inspector?.entries(in: [.quarantined]) else { return [] }
    return entries.filter { $0.quarantineReason == "deadletter" }
  }
}
