import Foundation
import MailboxLocks

@testable import AppGroupMailbox

/// A clock tests move by hand, in microseconds since the Unix epoch.
final class FakeClock: Sendable {
  private let micros: Locked<Int64>

  /// Starts at `start` (default 2026-01-01T00:00:00Z).
  init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
    micros = Locked(Int64(start.timeIntervalSince1970 * 1_000_000))
  }

  var now: Date { Date(timeIntervalSince1970: Double(micros.withLock { $0 }) / 1_000_000) }

  /// Moves the clock by `seconds` (negative steps it back).
  func advance(_ seconds: Double) { micros.withLock { $0 += Int64(seconds * 1_000_000) } }

  var mailboxClock: MailboxClock {
    MailboxClock { [self] in self.micros.withLock { $0 } }
  }
}

/// Collects diagnostics in order.
final class DiagnosticRecorder: Sendable {
  private let events = Locked<[AppGroupMailboxDiagnostic]>([])
  func record(_ event: AppGroupMailboxDiagnostic) { events.withLock { $0.append(event) } }
  var all: [AppGroupMailboxDiagnostic] { events.withLock { $0 } }
  func count(_ event: AppGroupMailboxDiagnostic) -> Int { all.filter { $0 == event }.count }
}
