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
      handler timeout releases it to its original position, and this run does not claim it
      again (with --follow: not before a delay of 1, 2, 4 ... up to 300 s by delivery count).
      Use --max-delivery-attempts to quarantine a message that keeps failing.
      A summary goes to stderr at the end (JSON with --json); a progress line too when stderr
      is a terminal.
      Exit status: 0 done (also after SIGTERM), 130 after SIGINT, 75 when a handler failed,
      66 no such mailbox, 69 CMD not found, 71 CMD could not be started, 74 I/O error.
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

  private var retry: RetrySchedule
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
        throw CommandFailure(.unavailable, "--exec: command not found: \(command[0])")
      }
      exec = (executable, Array(command.dropFirst()))
    } else {
      exec = nil
    }
    let counter = QuarantineCounter()
    quarantined = counter
    (mailbox, location) = try MailboxOptions.open(
      arguments, mustExist: true, diagnostic: { counter.record($0) })
    retry = RetrySchedule(retryInThisRun: follow)
    signals = Signals.install()
  }

  func run() throws -> ExitStatus {
    let deadline = timeout.map { startTime.addingTimeInterval($0) }
    let waiter: (any WorkWaiter)? =
      follow
      ? PollingWorkWaiter(
        mailboxDirectory: location.directory, wakeup: signals.wakeup,
        shouldStop: { [signals] in signals.stopSignal != nil })
      : nil
    while true {
      reap()
      supervise()
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
        guard let waiter else { break }
        var wait = 1.0
        if let deadline { wait = min(wait, deadline.timeIntervalSinceNow) }
        if let next = retry.nextEligible { wait = min(wait, next.timeIntervalSinceNow) }
        _ = waiter.waitForWork(timeout: max(0.01, wait))
        continue
      }
      signals.wakeup.wait(seconds: 0.25)
    }
    finishRunning()
    finishProgress()
    printSummary()
    if let fatal { throw fatal }
    if signals.stopSignal != nil { return signals.stoppedStatus }
    return failedHandlers > 0 ? .temporaryFailure : .success
  }

  /// Claims the next message this run may deliver, or nil when there is none (or on a fatal
  /// error, recorded in `fatal`).
  private func claimNext() -> AppGroupRawMailbox.Claim? {
    do {
      return try mailbox.claimPending(limit: 1, skipping: retry.skipped()).first
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
      let stoppedByUs = run.terminateSentAt != nil && !run.timedOut
      if !stoppedByUs {
        failedHandlers += 1
        Output.note("drain: message \(id): handler \(run.outcome); released")
      }
      do {
        try retry.releaseAfterFailure(run.claim)
        released += 1
      } catch AppGroupMailboxError.claimNoLongerExists {
        // Recovered by another consumer already: nothing of ours to release.
      } catch {
        fatal = CommandFailure(error, while: "release")
      }
      return true
    }
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
    let pending = (try? mailbox.inspector.status().pending).map(String.init) ?? "?"
    Output.raw(
      "\r\u{1B}[Kdelivered \(delivered) (\(String(format: "%.1f", Double(delivered) / seconds))/s)"
        + ", \(running.count) running, \(pending) pending")
  }

  private func finishProgress() {
    if Output.stderrIsTerminal, lastProgress != .distantPast { Output.raw("\r\u{1B}[K") }
  }

  private func printSummary() {
    let seconds = Date().timeIntervalSince(startTime)
    let stopped = signals.stopSignal.map { $0 == SIGINT ? "SIGINT" : "SIGTERM" }
    if json {
      var object = JSONObject()
      object.add("delivered", delivered)
      object.add("released", released)
      object.add("quarantined", quarantined.count)
      object.add("failedHandlers", failedHandlers)
      object.add("seconds", seconds: seconds)
      object.add("stoppedBy", stopped)
      Output.raw(object.text + "\n")
    } else {
      var text =
        "drain: delivered \(delivered), released \(released), quarantined \(quarantined.count)"
        + " in \(String(format: "%.2f", seconds)) s"
      if failedHandlers > 0 { text += "; \(failedHandlers) handler failures" }
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
