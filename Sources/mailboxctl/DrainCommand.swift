import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// `mailboxctl drain`: claims pending messages oldest first and delivers each one, as JSON Lines
/// on stdout or to a program (`--exec`). See ``Drainer``.
let drainCommand = Subcommand(
  spec: CommandSpec(
    name: "drain",
    summary: "Deliver pending messages oldest first: as JSON Lines on stdout, or to a program.",
    options: MailboxOptions.location + [
      OptionSpec(name: "--limit", kind: .value("N"), help: "Deliver at most N messages."),
      OptionSpec(
        name: "--timeout", kind: .value("SECONDS"),
        help: "Stop claiming after SECONDS; running handlers finish."),
      OptionSpec(
        name: "--handler-timeout", kind: .value("SECONDS"),
        help: "Stop a handler after SECONDS (SIGTERM, then SIGKILL 5 s later); release it."),
      OptionSpec(
        name: "--jobs", kind: .value("N"),
        help: "Run up to N handlers at once (default 1, which keeps FIFO order)."),
      OptionSpec(
        name: "--follow", kind: .flag,
        help: "When empty, wait for more until SIGINT or SIGTERM (or --timeout)."),
      OptionSpec(
        name: "--shutdown-timeout", kind: .value("SECONDS"),
        help: "After SIGINT/SIGTERM, let running handlers finish this long (default 30)."),
      OptionSpec(
        name: "--retry-delay", kind: .value("SECONDS"),
        help: "Delay before the 2nd delivery of a failed message; doubles each time (default 1)."),
      OptionSpec(
        name: "--retry-max-delay", kind: .value("SECONDS"),
        help: "The longest retry delay (default 300)."),
      OptionSpec(
        name: "--retry-jitter", kind: .value("FRACTION"),
        help: "Spread each retry delay by up to +/- FRACTION of itself, 0 to 1 (default 0.1)."),
      OptionSpec(name: "--json", kind: .flag, help: "Print the summary on stderr as JSON."),
      OptionSpec(
        name: "--exec", kind: .rest("CMD [ARG...]"),
        help: "Run CMD once per message, message JSON on stdin; must come last."),
    ] + MailboxOptions.limits,
    details: """
      Without --exec each message is printed as one JSON object a line: {"id", "enqueuedAt",
      "deliveryCount", "messageType", "message"}; it is acknowledged after its line is written.
      With --exec CMD gets the message JSON on stdin and MAILBOX_ID, MAILBOX_ENQUEUED_AT,
      MAILBOX_DELIVERY_COUNT, MAILBOX_MESSAGE_TYPE, MAILBOX_NAMESPACE and MAILBOX_CONTAINER in
      its environment. Exit status 0 acknowledges the message; any other status, a signal or a
      handler timeout releases it with a retry delay: it waits in delayed/ (not pending, so it
      neither spins nor blocks the messages behind it) and returns to its original position
      after min(--retry-max-delay, --retry-delay x 2^(deliveries - 1)) seconds, +/- jitter.
      The mailbox's maxDeliveryAttempts (mailboxctl create/config) quarantines a message that
      keeps failing.
      Without --follow, drain exits once nothing is pending; delayed messages keep waiting for
      a later run (the summary says how many, and when the next is due). With --follow it waits
      for wake-ups (inotify) and sleeps until the next due time.
      A summary goes to stderr at the end (JSON with --json); a progress line too when stderr
      is a terminal.
      Exit status: 0 done (also after SIGTERM), 130 after SIGINT, 75 when a handler failed,
      66 no such mailbox, 69 CMD not found or not executable, 71 CMD could not be started, 74 I/O error.
      """),
  run: { arguments in try Drainer(arguments).run() })

/// The drain loop: one coordinating thread claims only what it is about to start, supervises
/// handlers (lease renewal, timeouts), and stops cleanly on signals.
final class Drainer {
  private let limit: Int?
  private let timeout: Double?
  private let handlerTimeout: Double?
  private let shutdownTimeout: Double
  private let jobs: Int
  private let follow: Bool
  private let json: Bool
  private let exec: (URL, [String])?
  private let mailbox: AppGroupRawMailbox
  private let location: MailboxOptions.Location
  private let signals: Signals
  private let quarantined: QuarantineCounter
  /// Seconds between SIGTERM and SIGKILL for a handler being stopped.
  private let killGrace: TimeInterval = 5

  private let retryPolicy: AppGroupMailboxRetryPolicy
  /// The longest idle wait of `--follow` between looks at the mailbox when nothing wakes it
  /// (a bound against wall-clock steps, not a poll: wake-ups, due times and leases end it).
  private let idleRecheck: TimeInterval = 60
  private var running: [HandlerRun] = []
  private var started = 0
  private var delivered = 0
  private var released = 0
  private var failedHandlers = 0
  private var fatal: CommandFailure?
  private var lastProgress = Date.distantPast
  private let startTime = Date()

  init(_ arguments: ParsedArguments) throws {
    limit = try arguments.integer("--limit", in: 1...Int.max)
    timeout = try arguments.seconds("--timeout")
    handlerTimeout = try arguments.seconds("--handler-timeout")
    shutdownTimeout = try arguments.seconds("--shutdown-timeout") ?? 30
    jobs = try arguments.integer("--jobs", in: 1...1024) ?? 1
    follow = arguments.flag("--follow")
    json = arguments.flag("--json")
    if let command = arguments.values["--exec"] {
      guard let executable = HandlerRun.resolve(command[0]) else {
        throw execLookupFailure(command[0])
      }
      exec = (executable, Array(command.dropFirst()))
    } else {
      exec = nil
    }
    let counter = QuarantineCounter()
    quarantined = counter
    retryPolicy = try Self.retryPolicy(arguments)
    let deadLetters = DeadLetterReport(try MailboxOptions.location(arguments), command: "drain")
    (mailbox, location) = try MailboxOptions.open(
      arguments, mustExist: true,
      diagnostic: {
        counter.record($0)
        deadLetters.record($0)
      })
    signals = Signals.install()
  }

  /// The retry policy of `--retry-delay`, `--retry-max-delay` and `--retry-jitter` (multiplier
  /// 2).
  static func retryPolicy(_ arguments: ParsedArguments) throws(UsageError)
    -> AppGroupMailboxRetryPolicy
  {
    let base = try arguments.seconds("--retry-delay") ?? 1
    let maximum = try arguments.seconds("--retry-max-delay") ?? max(300, base)
    guard maximum >= base else {
      throw UsageError(
        message: "--retry-max-delay (\(arguments.value("--retry-max-delay") ?? "")) is less than "
          + "--retry-delay (\(arguments.value("--retry-delay") ?? "1, the default"))")
    }
    var jitter = 0.1
    if let text = arguments.value("--retry-jitter") {
      guard let value = Double(text), (0...1).contains(value) else {
        throw UsageError(message: "--retry-jitter needs a fraction from 0 to 1, not '\(text)'")
      }
      jitter = value
    }
    return AppGroupMailboxRetryPolicy(
      baseDelay: base, multiplier: 2, maximumDelay: maximum, jitter: jitter)
  }

  func run() throws -> ExitStatus {
    let deadline = timeout.map { startTime.addingTimeInterval($0) }
    let wakeUps = follow ? try MailboxWakeUps(mailbox, wakeup: signals.wakeup) : nil
    defer { wakeUps?.close() }
    while true {
      reap()
      supervise()
      do {
        _ = try wakeUps?.take()
      } catch {
        fatal = error
      }
      let timeUp = deadline.map { Date() >= $0 } ?? false
      let limitReached = limit.map { started >= $0 } ?? false
      if signals.stopSignal != nil || fatal != nil || timeUp || limitReached { break }
      var empty = false
      while running.count < jobs, limit.map({ started < $0 }) ?? true,
        signals.stopSignal == nil, fatal == nil
      {
        guard let claim = claimNext() else {
          empty = true
          break
        }
        started += 1
        deliver(claim)
      }
      showProgress()
      if running.isEmpty {
        if !empty { continue }
        guard wakeUps != nil else { break }
        signals.wakeup.waitCoalescing(seconds: idleTimeout(deadline: deadline))
        continue
      }
      signals.wakeup.waitCoalescing(seconds: 0.25)
    }
    finishRunning()
    finishProgress()
    printSummary()
    if let fatal { throw fatal }
    if signals.stopSignal != nil { return signals.stoppedStatus }
    return failedHandlers > 0 ? .temporaryFailure : .success
  }

  /// How long `--follow` may wait with nothing pending and nothing running: until a wake-up
  /// (the `Wakeup` ends the wait early), the next due time of a delayed message (the claim that
  /// follows makes it pending), the earliest lease of another consumer's claim (the claim that
  /// follows recovers it if abandoned; 1 s when it ran out but is still there), the next look
  /// at an entry a claim skipped for now (a young hard link), `--timeout`, or ``idleRecheck``,
  /// whichever comes first.
  private func idleTimeout(deadline: Date?) -> TimeInterval {
    var wait = idleRecheck
    if let deadline { wait = min(wait, deadline.timeIntervalSinceNow) }
    if let due = try? mailbox.nextDueDate() { wait = min(wait, due.timeIntervalSinceNow + 0.001) }
    if let recheck = mailbox.nextRecheckDate() { wait = min(wait, recheck.timeIntervalSinceNow) }
    let leases = (try? mailbox.inspector.entries(in: [.claimed]))?.compactMap(\.leaseExpiresAt)
    if let lease = leases?.min() {
      let left = lease.timeIntervalSinceNow
      wait = min(wait, left <= 0 ? 1 : left + 0.001)
    }
    return max(0.001, wait)
  }

  /// Claims the next pending message (due delayed messages are made pending first), or nil
  /// when there is none (or on a fatal error, recorded in `fatal`).
  private func claimNext() -> AppGroupRawMailbox.Claim? {
    do {
      return try mailbox.claimPending(limit: 1).first
    } catch {
      fatal = CommandFailure(error, while: "")
      return nil
    }
  }

  private func deliver(_ claim: AppGroupRawMailbox.Claim) {
    guard let (executable, arguments) = exec else {
      printLine(claim)
      return
    }
    do {
      running.append(
        try HandlerRun(
          executable: executable, arguments: arguments, claim: claim, location: location,
          wakeup: signals.wakeup))
    } catch {
      try? claim.release()
      released += 1
      fatal = CommandFailure(.osError, "--exec: cannot start \(executable.path): \(error)")
    }
  }

  /// Default delivery: the line is written (write(2), unbuffered) before the acknowledge.
  private func printLine(_ claim: AppGroupRawMailbox.Claim) {
    var object = JSONObject()
    object.add("id", claim.id.uuidString.lowercased())
    object.add("enqueuedAt", date: claim.enqueuedAt)
    object.add("deliveryCount", claim.deliveryCount)
    object.add("messageType", claim.messageType)
    object.add("message", rawJSON: claim.payload)
    do {
      try Output.data(object.text + "\n")
    } catch {
      try? claim.release()
      released += 1
      fatal = error
      return
    }
    acknowledge(claim)
  }

  private func acknowledge(_ claim: AppGroupRawMailbox.Claim) {
    do {
      try claim.acknowledge()
      delivered += 1
    } catch AppGroupMailboxError.claimNoLongerExists {
      Output.note(
        "drain: message \(claim.id.uuidString.lowercased()): the claim was recovered by another "
          + "consumer before the acknowledge (lease too short?); it will be delivered again")
    } catch {
      fatal = CommandFailure(error, while: "")
    }
  }

  /// Acknowledges or releases every handler that has exited.
  private func reap() {
    running.removeAll { run in
      guard run.hasExited else { return false }
      run.process.waitUntilExit()
      if run.succeeded && !run.timedOut {
        acknowledge(run.claim)
        return true
      }
      let id = run.claim.id.uuidString.lowercased()
      // A handler stopped by a stop signal did not fail: its message goes straight back.
      let stoppedByUs = run.terminateSentAt != nil && !run.timedOut
      if !stoppedByUs { failedHandlers += 1 }
      let delay = stoppedByUs ? 0 : retryPolicy.delay(afterDelivery: run.claim.deliveryCount)
      do {
        try run.claim.release(retryAfter: delay)
        released += 1
        if !stoppedByUs {
          Output.note(
            "drain: message \(id): handler \(run.outcome); released, retry in "
              + "\(Self.format(seconds: delay)) s")
        }
      } catch AppGroupMailboxError.claimNoLongerExists {
        // Recovered by another consumer already: nothing of ours to release.
        if !stoppedByUs {
          Output.note(
            "drain: message \(id): handler \(run.outcome); its claim was already recovered")
        }
      } catch {
        fatal = CommandFailure(error, while: "release")
      }
      return true
    }
  }

  /// Seconds with up to three decimals, without trailing zeros (`0.4`, `2`, `0.125`).
  static func format(seconds: TimeInterval) -> String {
    var text = String(format: "%.3f", seconds)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text
  }

  /// Renews leases of long handlers and enforces `--handler-timeout`.
  private func supervise() {
    let now = Date()
    let renewEvery = mailbox.limits.claimTimeout / 3
    for run in running where !run.hasExited {
      if let handlerTimeout, now.timeIntervalSince(run.startedAt) >= handlerTimeout {
        run.timedOut = true
        run.stop(grace: killGrace, now: now)
      } else if run.terminateSentAt != nil {
        run.stop(grace: killGrace, now: now)
      }
      if now.timeIntervalSince(run.lastRenewal) >= renewEvery {
        try? run.claim.renew()
        run.lastRenewal = now
      }
    }
  }

  /// Lets running handlers finish: without a stop request, as long as they take (bounded by
  /// `--handler-timeout`); after SIGINT/SIGTERM, for `--shutdown-timeout` seconds (or at once
  /// after a second signal), then SIGTERM and SIGKILL; their messages are released.
  private func finishRunning() {
    var stopRequestedAt: Date?
    while !running.isEmpty {
      reap()
      supervise()
      if signals.stopSignal != nil || fatal != nil {
        let since = stopRequestedAt ?? Date()
        stopRequestedAt = since
        if signals.stopCount > 1 || fatal != nil
          || Date().timeIntervalSince(since) >= shutdownTimeout
        {
          for run in running { run.stop(grace: killGrace) }
        }
      }
      if running.isEmpty { break }
      signals.wakeup.wait(seconds: 0.1)
      showProgress()
    }
  }

  private func showProgress() {
    guard Output.stderrIsTerminal, Date().timeIntervalSince(lastProgress) >= 0.25 else { return }
    lastProgress = Date()
    let seconds = max(0.001, Date().timeIntervalSince(startTime))
    let status = try? mailbox.inspector.status()
    let pending = status.map { String($0.pending) } ?? "?"
    let delayed = status.map { $0.delayed > 0 ? ", \($0.delayed) delayed" : "" } ?? ""
    Output.raw(
      "\r\u{1B}[Kdelivered \(delivered) (\(String(format: "%.1f", Double(delivered) / seconds))/s)"
        + ", \(running.count) running, \(pending) pending\(delayed)")
  }

  private func finishProgress() {
    if Output.stderrIsTerminal, lastProgress != .distantPast { Output.raw("\r\u{1B}[K") }
  }

  private func printSummary() {
    let seconds = Date().timeIntervalSince(startTime)
    let stopped = signals.stopSignal.map { $0 == SIGINT ? "SIGINT" : "SIGTERM" }
    // Messages left waiting in delayed/ (failed ones, and delayed enqueues), for a later run.
    let status = try? mailbox.inspector.status()
    let delayed = status?.delayed ?? 0
    if json {
      var object = JSONObject()
      object.add("delivered", delivered)
      object.add("released", released)
      object.add("quarantined", quarantined.count)
      object.add("failedHandlers", failedHandlers)
      object.add("delayed", status?.delayed)
      object.add("nextDueAt", date: status?.nextDueAt)
      object.add("seconds", seconds: seconds)
      object.add("stoppedBy", stopped)
      Output.raw(object.text + "\n")
    } else {
      var text =
        "drain: delivered \(delivered), released \(released), quarantined \(quarantined.count)"
        + " in \(String(format: "%.2f", seconds)) s"
      if failedHandlers > 0 {
        text += "; \(failedHandlers) handler failure" + (failedHandlers == 1 ? "" : "s")
      }
      if delayed > 0, let due = status?.nextDueAt {
        text +=
          "; \(delayed) delayed" + (delayed == 1 ? " until " : ", the next until ")
          + ISO8601.format(due)
      }
      if let stopped { text += "; stopped by \(stopped)" }
      Output.note(text)
    }
  }
}

/// Counts quarantine diagnostics (from any thread).
final class QuarantineCounter: Sendable {
  private let value = Locked<Int>(0)

  func record(_ event: AppGroupMailboxDiagnostic) {
    switch event {
    case .malformedMessageQuarantined, .unsafeFileQuarantined, .deadLetterQuarantined:
      value.withLock { $0 += 1 }
    default: break
    }
  }

  var count: Int { value.withLock { $0 } }
}
