import Foundation

@testable import AppGroupMailbox

/// A fresh container directory for one test, removed when the value is released.
final class TemporaryContainer: @unchecked Sendable {
  let url: URL

  init() throws {
    url = FileManager.default.temporaryDirectory
      .appendingPathComponent("agm-test-\(UUID().uuidString.prefix(12))", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(at: url) }

  /// A fresh container with a fake clock and a diagnostics recorder, the set-up most expiry,
  /// recovery and quarantine tests share (pass both to ``mailbox(_:namespace:limits:overflowPolicy:messageType:durability:clock:diagnostics:)``).
  static func withClockAndDiagnostics() throws -> (
    TemporaryContainer, FakeClock, DiagnosticRecorder
  ) {
    (try TemporaryContainer(), FakeClock(), DiagnosticRecorder())
  }

  /// `<container>/AppGroupMailbox/<namespace>/<area>`.
  func area(_ area: String, namespace: String = "jobs") -> URL {
    url.appendingPathComponent("AppGroupMailbox/\(namespace)/\(area)", isDirectory: true)
  }

  /// Names in an area, sorted.
  func names(_ area: String, namespace: String = "jobs") -> [String] {
    ((try? FileManager.default.contentsOfDirectory(
      atPath: self.area(area, namespace: namespace).path))
      ?? []).sorted()
  }

  /// Opens a typed mailbox here with a fake clock and a diagnostics recorder.
  func mailbox<M: Codable & Sendable>(
    _ type: M.Type = String.self,
    namespace: String = "jobs",
    limits: AppGroupMailboxLimits = .init(),
    overflowPolicy: AppGroupMailboxOverflowPolicy = .rejectNewest,
    messageType: String? = nil,
    durability: AppGroupMailboxDurability = .full,
    clock: FakeClock? = nil,
    diagnostics: DiagnosticRecorder? = nil
  ) throws -> AppGroupMailbox<M> {
    var sink: (@Sendable (AppGroupMailboxDiagnostic) -> Void)? = nil
    if let diagnostics { sink = { event in diagnostics.record(event) } }
    let mailboxClock: MailboxClock = clock?.mailboxClock ?? .system
    return try AppGroupMailbox<M>(
      containerURL: url, namespace: namespace, limits: limits, overflowPolicy: overflowPolicy,
      notificationName: nil, messageType: messageType, diagnostic: sink,
      durability: durability, permissions: .private, clock: mailboxClock)
  }
}
