import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// What `drain` tells the user on stderr: a progress line while it runs (only when stderr is a
/// terminal) and the summary at the end (JSON with `--json`).
final class DrainReport {
  let context: DrainContext
  let json: Bool
  let quarantined: QuarantineCounter
  let startTime = Date()
  private var lastProgress = Date.distantPast
  /// The counts the progress line shows, and when they may be read again (see
  /// ``showProgress(running:)``).
  private var counts: AppGroupMailboxCounts?
  private var countsDueAt = Date.distantPast

  init(context: DrainContext, json: Bool, quarantined: QuarantineCounter) {
    self.context = context
    self.json = json
    self.quarantined = quarantined
  }

  /// Rewrites the progress line, at most four times a second. The pending and delayed counts
  /// come from the names (``AppGroupMailboxInspector/counts()``: a listing of each area, no
  /// system call per message), read again only after ten times as long as the last one took,
  /// at least a second: the line never costs the drain more than a tenth of its time.
  func showProgress(running: Int) {
    guard Output.stderrIsTerminal, Date().timeIntervalSince(lastProgress) >= 0.25 else { return }
    lastProgress = Date()
    let seconds = max(0.001, Date().timeIntervalSince(startTime))
    if Date() >= countsDueAt {
      let started = Date()
      counts = try? context.mailbox.inspector.counts()
      countsDueAt = Date().addingTimeInterval(max(1, 10 * Date().timeIntervalSince(started)))
    }
    let status = counts
    let pending = status.map { String($0.pending) } ?? "?"
    let delayed = status.map { $0.delayed > 0 ? ", \($0.delayed) delayed" : "" } ?? ""
    let rate = String(format: "%.1f", Double(context.delivered) / seconds)
    Output.raw(
      "\r\u{1B}[Kdelivered \(context.delivered) (\(rate)/s), \(running) running, "
        + "\(pending) pending\(delayed)")
  }

  /// Clears the progress line and prints the summary.
  func finish() {
    if Output.stderrIsTerminal, lastProgress != .distantPast { Output.raw("\r\u{1B}[K") }
    let seconds = Date().timeIntervalSince(startTime)
    let stopped = context.signals.stopSignalName
    // Messages left waiting in delayed/ (failed ones, and delayed enqueues), for a later run:
    // that area alone is listed, not the pending one (status() would hold every pending message
    // in memory at once, 16 MiB at depth 100,000, more than the drain itself).
    let waiting = try? context.mailbox.inspector.entries(in: [.delayed])
    let delayed = waiting?.count ?? 0
    let nextDueAt = waiting?.compactMap(\.dueAt).min()
    if quarantined.notMessages > 0 {
      Output.note(
        QuarantineCounter.notMessagesNote(
          "drain", quarantined.notMessages,
          kept: context.mailbox.settings.maxQuarantinedFiles > 0))
    }
    if json {
      var object = JSONObject()
      object.add("delivered", context.delivered)
      object.add("released", context.released)
      object.add("quarantined", quarantined.count)
      object.add("expired", quarantined.expired)
      object.add("failedHandlers", context.failedHandlers)
      object.add("delayed", waiting?.count)
      object.add("nextDueAt", date: nextDueAt)
      object.add("seconds", seconds: seconds)
      object.add("stoppedBy", stopped)
      Output.raw(object.text + "\n")
    } else {
      var text =
        "drain: delivered \(context.delivered), released \(context.released), quarantined "
        + "\(quarantined.count) in \(String(format: "%.2f", seconds)) s"
      if quarantined.expired > 0 {
        text += "; \(quarantined.expired) expired before a handler had them"
      }
      if context.failedHandlers > 0 {
        text +=
          "; " + Output.counted(context.failedHandlers, "handler failure")
      }
      if delayed > 0, let due = nextDueAt {
        text +=
          "; \(delayed) delayed" + (delayed == 1 ? " until " : ", the next until ")
          + ISO8601.format(due)
      }
      if let stopped { text += "; stopped by \(stopped)" }
      // A hold that began during the run ends it as an empty mailbox would, silently otherwise.
      if context.mailbox.isHeld { text += "; the mailbox is held until 'mailboxctl resume'" }
      Output.note(text)
    }
  }
}

/// Counts the drain's quarantine and expiry diagnostics (from any thread): the messages that left
/// the mailbox without reaching the handler.
final class QuarantineCounter: Sendable {
  private let value = Locked<(quarantined: Int, notMessages: Int, expired: Int)>((0, 0, 0))

  func record(_ event: AppGroupMailboxDiagnostic) {
    switch event {
    case .malformedMessageQuarantined, .unsafeFileQuarantined:
      value.withLock {
        $0.quarantined += 1
        $0.notMessages += 1
      }
    case .deadLetterQuarantined:
      value.withLock { $0.quarantined += 1 }
    case .expiredMessageRemoved:
      value.withLock { $0.expired += 1 }
    default: break
    }
  }

  /// Files quarantined (malformed, unsafe, dead letters).
  var count: Int { value.withLock { $0.quarantined } }
  /// Files quarantined as no message this mailbox can deliver (malformed, unsafe): not the
  /// dead letters, which ``DeadLetterReport`` names.
  var notMessages: Int { value.withLock { $0.notMessages } }
  /// Messages deleted because their lifetime ran out before a handler had them.
  var expired: Int { value.withLock { $0.expired } }

  /// The note `command` (`claim`, `drain`) prints for the `count` files it moved to quarantine
  /// as no message it can deliver; `kept` false when the mailbox keeps no quarantined files
  /// (`maxQuarantinedFiles` 0), which deletes them instead.
  static func notMessagesNote(_ command: String, _ count: Int, kept: Bool) -> String {
    let files = "\(Output.counted(count, "file")) that \(count == 1 ? "is" : "are") no message it "
    guard kept else {
      return "\(command): deleted \(files)can deliver (malformed or unsafe): the mailbox keeps "
        + "no quarantined files (maxQuarantinedFiles 0)"
    }
    return "\(command): moved \(files)can deliver (malformed or unsafe) to quarantine "
      + "('mailboxctl quarantine list' shows \(count == 1 ? "it" : "them"))"
  }
}
