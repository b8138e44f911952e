import AppGroupMailbox
import Foundation

/// Worker command for case C29 (each value in its own process, since a trap ends the process):
///
/// - `time-value CONTAINER CASE`: makes the one call CASE names (see `timeValueCases`) on a
///   fresh `AppGroupMailbox<String>` in namespace `jobs`, then prints one line: `ok` and what the
///   mailbox holds (`pending=<n> delayed=<n> claimed=<n> claimable=<n>`, plus `due=<micros>` of
///   the delayed entry and the diagnostics), or `error <the thrown error>`.
let timeValueCommands: [WorkerCommand] = [
  WorkerCommand(name: "time-value") { args in
    let container = URL(fileURLWithPath: args[0])
    guard let run = timeValueCases[args[1]] else {
      throw WorkerFailure(message: "unknown case \(args[1])")
    }
    let events = DiagnosticLog()
    do {
      let detail = try run(container, events)
      emitLine("ok " + (detail.isEmpty ? "" : detail + " ") + describe(container, events))
    } catch {
      emitLine("error \(error)")
    }
  }
]

struct WorkerFailure: Error {
  var message: String
}

/// Diagnostics of one run, in order.
final class DiagnosticLog: @unchecked Sendable {
  private let lock = NSLock()
  private var events: [AppGroupMailboxDiagnostic] = []
  func record(_ event: AppGroupMailboxDiagnostic) { lock.withLock { events.append(event) } }
  var all: [AppGroupMailboxDiagnostic] { lock.withLock { events } }
}

private func mailbox(
  _ container: URL, _ events: DiagnosticLog, limits: AppGroupMailboxLimits = .init()
) throws -> AppGroupMailbox<String> {
  try AppGroupMailbox<String>(
    containerURL: container, namespace: "jobs", limits: limits,
    diagnostic: { events.record($0) })
}

/// Counts per area, the due time of the first delayed entry, what a claim now takes, and the
/// diagnostics.
private func describe(_ container: URL, _ events: DiagnosticLog) -> String {
  let base = container.appendingPathComponent("AppGroupMailbox/jobs")
  func names(_ area: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(
      atPath: base.appendingPathComponent(area).path)) ?? []).sorted()
  }
  var text =
    "pending=\(names("pending").count) delayed=\(names("delayed").count)"
    + " claimed=\(names("claimed").count)"
  if let due = names("delayed").first?.prefix(16) { text += " due=\(due)" }
  let claimable = (try? mailbox(container, DiagnosticLog()).claimPending().count) ?? -1
  text += " claimable=\(claimable)"
  let diagnostics = events.all.map { "\($0)" }
  if !diagnostics.isEmpty { text += " diagnostics=" + diagnostics.joined(separator: ",") }
  return text
}

/// The dates of C18, by name.
private let dates: [String: Date] = [
  "1969": Date(timeIntervalSince1970: -1),
  "1900": Date(timeIntervalSince1970: -2_208_988_800),
  "2287": Date(timeIntervalSince1970: 10_003_564_800),
  "nan": Date(timeIntervalSince1970: .nan),
]

typealias TimeValueCase = @Sendable (URL, DiagnosticLog) throws -> String

/// Every time-valued public parameter, with the values C29 names (NaN, infinity, huge).
let timeValueCases: [String: TimeValueCase] = {
  var cases: [String: TimeValueCase] = [:]
  for (label, date) in dates {
    cases["enqueuedAt-\(label)"] = { container, events in
      try mailbox(container, events).enqueue("m", id: UUID(), enqueuedAt: date)
      return ""
    }
    cases["notBefore-\(label)"] = { container, events in
      try mailbox(container, events).enqueue("m", notBefore: date)
      return ""
    }
    cases["id-notBefore-\(label)"] = { container, events in
      try mailbox(container, events).enqueue("m", id: UUID(), notBefore: date)
      return ""
    }
  }
  for (label, seconds) in [("nan", Double.nan), ("infinity", .infinity), ("1e13", 1e13)] {
    cases["delay-\(label)"] = { container, events in
      try mailbox(container, events).enqueue("m", delay: seconds)
      return ""
    }
    cases["delay-\(label)-long-lifetime"] = { container, events in
      try mailbox(container, events, limits: .init(messageLifetime: 1e300)).enqueue(
        "m", delay: seconds)
      return ""
    }
    cases["retryAfter-\(label)"] = { container, events in
      let box = try mailbox(container, events, limits: .init(messageLifetime: 1e300))
      try box.enqueue("m")
      for claim in try box.claimPending() { try claim.release(retryAfter: seconds) }
      return ""
    }
    cases["wait-\(label)"] = { container, events in
      let box = try mailbox(container, events)
      try box.enqueue("m")  // something pending: a wait returns at once unless refused
      return "woke=\(try box.wait(timeout: seconds))"
    }
    cases["watcher-wait-\(label)"] = { container, events in
      let box = try mailbox(container, events)
      let watcher = try box.wakeUps()
      defer { watcher.close() }
      try box.enqueue("m")
      return "woke=\(try watcher.wait(timeout: seconds))"
    }
  }
  cases["retryPolicy-huge"] = { container, events in
    let box = try mailbox(container, events, limits: .init(messageLifetime: 1e300))
    try box.enqueue("m")
    let delay = AppGroupMailboxRetryPolicy(baseDelay: 1e300, maximumDelay: 1e308).delay(
      afterDelivery: 1)
    for claim in try box.claimPending() { try claim.release(retryAfter: delay) }
    return ""
  }
  cases["retryPolicy-intmin"] = { _, _ in
    "delay=\(AppGroupMailboxRetryPolicy().nominalDelay(afterDelivery: Int.min))"
  }
  for (label, seconds) in [("1e13", 1e13), ("ceiling", AppGroupMailboxLimits.claimTimeoutCeiling)] {
    cases["claimTimeout-\(label)"] = { container, events in
      let box = try mailbox(container, events, limits: .init(claimTimeout: seconds))
      try box.enqueue("m")
      let claims = try box.claimPending()
      for claim in claims { try claim.renew() }
      try box.performMaintenance()  // A lease of the longest timeout is not taken for forged.
      return "claims=\(claims.count)"
    }
  }
  for (label, seconds) in [("nan", Double.nan), ("infinity", .infinity)] {
    cases["claimTimeout-\(label)"] = { container, events in
      _ = try mailbox(container, events, limits: .init(claimTimeout: seconds))
      return ""
    }
    cases["messageLifetime-\(label)"] = { container, events in
      _ = try mailbox(container, events, limits: .init(messageLifetime: seconds))
      return ""
    }
    cases["pollingInterval-\(label)"] = { container, events in
      _ = try mailbox(container, events).wakeUps(pollingInterval: seconds)
      return ""
    }
  }
  cases["messageLifetime-1e300"] = { container, events in
    let box = try mailbox(container, events, limits: .init(messageLifetime: 1e300))
    try box.enqueue("m")
    return ""
  }
  return cases
}()
