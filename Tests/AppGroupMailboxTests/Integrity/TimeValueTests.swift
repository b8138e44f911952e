import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Cases C17, C18 and C29 (issue 11, items 3 and 4): explicit dates never become the implicit
/// clock; dates the names cannot hold are refused with their range; no time value crashes.
@Suite struct TimeValueTests {
  static let range = "1970-01-01T00:00:00Z to 2286-11-20T17:46:39.999999Z"
  static func refusedDate(_ parameter: String) -> String {
    "error invalidLimit(\"\(parameter) (accepted: \(range))\")"
  }
  static func nanDelay(_ parameter: String) -> String {
    "error invalidLimit(\"\(parameter) (accepted: a number of seconds, not NaN)\")"
  }
  static let nanTimeout =
    "error invalidLimit(\"timeout (accepted: a number of seconds, not NaN; nil or infinity waits"
    + " without limit)\")"
  static let farDue = "ok pending=0 delayed=1 claimed=0 due=9999999999999999 claimable=0"

  /// Every case of the `time-value` worker command and the exact line it must print.
  static let c29: [(String, String)] = [
    ("enqueuedAt-nan", refusedDate("enqueuedAt")),
    ("notBefore-nan", refusedDate("notBefore")),
    ("id-notBefore-nan", refusedDate("notBefore")),
    ("delay-nan", nanDelay("delay")),
    (
      "delay-infinity",
      "ok pending=0 delayed=0 claimed=0 claimable=0 diagnostics=expiredMessageRemoved"
    ),
    (
      "delay-1e13", "ok pending=0 delayed=0 claimed=0 claimable=0 diagnostics=expiredMessageRemoved"
    ),
    ("delay-nan-long-lifetime", nanDelay("delay")),
    ("delay-infinity-long-lifetime", farDue),
    ("delay-1e13-long-lifetime", farDue),
    ("retryAfter-nan", nanDelay("retryAfter")),
    ("retryAfter-infinity", farDue),
    ("retryAfter-1e13", farDue),
    ("retryPolicy-huge", farDue),
    ("retryPolicy-intmin", "ok delay=1.0 pending=0 delayed=0 claimed=0 claimable=0"),
    ("claimTimeout-1e13", "error invalidLimit(\"claimTimeout\")"),
    ("claimTimeout-ceiling", "ok claims=1 pending=0 delayed=0 claimed=1 claimable=0"),
    ("claimTimeout-nan", "error invalidLimit(\"claimTimeout\")"),
    ("claimTimeout-infinity", "error invalidLimit(\"claimTimeout\")"),
    ("messageLifetime-nan", "error invalidLimit(\"messageLifetime\")"),
    ("messageLifetime-infinity", "error invalidLimit(\"messageLifetime\")"),
    ("messageLifetime-1e300", "ok pending=1 delayed=0 claimed=0 claimable=1"),
    ("pollingInterval-nan", "error invalidLimit(\"pollingInterval\")"),
    ("pollingInterval-infinity", "error invalidLimit(\"pollingInterval\")"),
    ("wait-nan", nanTimeout),
    ("wait-infinity", "ok woke=true pending=1 delayed=0 claimed=0 claimable=1"),
    ("wait-1e13", "ok woke=true pending=1 delayed=0 claimed=0 claimable=1"),
    ("watcher-wait-nan", nanTimeout),
    ("watcher-wait-infinity", "ok woke=true pending=1 delayed=0 claimed=0 claimable=1"),
    ("watcher-wait-1e13", "ok woke=true pending=1 delayed=0 claimed=0 claimable=1"),
  ]

  @Test(arguments: c29)
  func `C29: no time value crashes a process; each is refused or clamped by its rule`(
    name: String, expected: String
  ) throws {
    let container = try TemporaryContainer()
    let result = try Processes.runWorker(["time-value", container.url.path, name])
    #expect(result.reason == .exit)
    #expect(result.status == 0)
    #expect(result.lines == [expected])
  }

  /// The C18 dates (and NaN) for `enqueuedAt` and `notBefore`, by name.
  static let outside: [(String, Date)] = [
    ("1969-12-31T23:59:59Z", Date(timeIntervalSince1970: -1)),
    ("1900-01-01T00:00:00Z", Date(timeIntervalSince1970: -2_208_988_800)),
    ("2287-01-01T00:00:00Z", Date(timeIntervalSince1970: 10_003_564_800)),
  ]

  @Test(arguments: outside)
  func `C18: the library refuses dates outside 1970 to 2286 with the range, writing nothing`(
    text: String, date: Date
  ) throws {
    let container = try TemporaryContainer()
    let typed: AppGroupMailbox<String> = try container.mailbox()
    let raw = try container.rawMailbox()
    let enqueuedAt = AppGroupMailboxError.invalidLimit("enqueuedAt (accepted: \(Self.range))")
    let notBefore = AppGroupMailboxError.invalidLimit("notBefore (accepted: \(Self.range))")
    #expect(throws: enqueuedAt) { try typed.enqueue("m", id: UUID(), enqueuedAt: date) }
    #expect(throws: enqueuedAt) { try raw.enqueue(Data("1".utf8), enqueuedAt: date) }
    #expect(throws: notBefore) { try typed.enqueue("m", notBefore: date) }
    #expect(throws: notBefore) { try typed.enqueue("m", id: UUID(), notBefore: date) }
    #expect(throws: notBefore) { try raw.enqueue(Data("1".utf8), notBefore: date) }
    for area in ["pending", "delayed", "claimed", "quarantine", "tmp"] {
      #expect(container.names(area).isEmpty)
    }
  }

  @Test func `C18: the first and the last date of the range are accepted`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(messageLifetime: 1e300))
    try raw.enqueue(Data("1".utf8), enqueuedAt: Date(timeIntervalSince1970: 0))
    try raw.enqueue(Data("2".utf8), enqueuedAt: AppGroupRawMailbox.representableDates.upperBound)
    // A Date (a Double of seconds) near 2286 holds microseconds to within 2.
    let micros = container.pendingNames().map(\.key.micros)
    #expect(micros.first == 0)
    #expect((9_999_999_999_999_997...9_999_999_999_999_999).contains(micros.last ?? 0))
  }

  @Test(arguments: outside)
  func `C18: mailboxctl refuses --enqueued-at and --not-before outside the range with exit 64`(
    text: String, date: Date
  ) throws {
    let container = try TemporaryContainer()
    for option in ["--enqueued-at", "--not-before"] {
      let result = try Mailboxctl.run(
        ["enqueue"] + container.arguments() + [option, text, "--data", "1"])
      #expect(result.status == 64)
      #expect(
        result.stderr
          == "mailboxctl: error: enqueue: \(option) needs a date from \(Self.range), not '\(text)'; nothing was"
          + " enqueued\nRun 'mailboxctl enqueue --help' for usage.\n")
    }
    for area in ["pending", "delayed", "claimed", "quarantine", "tmp"] {
      #expect(container.names(area).isEmpty)
    }
  }

  @Test(arguments: [false, true])
  func `C17: an import dated 2100 never becomes the clock, with the state intact or rebuilt`(
    removeState: Bool
  ) throws {
    let container = try TemporaryContainer()
    let x = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + [
        "--enqueued-at", "2100-01-01T00:00:00Z", "--data", "\"X\"",
      ])
    #expect(x.status == 0)
    let state = container.url.appendingPathComponent("AppGroupMailbox/jobs/state")
    if removeState { try FileManager.default.removeItem(at: state) }
    let before = Date()
    let y = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "\"Y\""])
    #expect(y.status == 0)
    let claims = try container.rawMailbox().claimPending()
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"Y\"", "\"X\""])
    let stamped = try #require(claims.first?.enqueuedAt)
    #expect(abs(stamped.timeIntervalSince(before)) < 1)
    #expect(claims.last?.enqueuedAt == ISO8601.parse("2100-01-01T00:00:00Z"))
    #expect(try #require(container.counters()).newestImplicitMicros <= micros(Date()))
  }
}
