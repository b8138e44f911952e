import AppGroupMailbox
import Foundation
import Glibc

/// `--coprocess CMD [ARG...]`: one long-running handler speaking the handler protocol
/// (``HandlerProtocol``, docs/HANDLER-PROTOCOL.md), up to `--jobs` messages in flight.
///
/// Whatever the handler did not answer is released, never acknowledged: when it exits or
/// crashes, prints a line that is not an answer, or leaves a message unanswered past
/// `--handler-timeout`. It is then stopped (SIGTERM to its process group, SIGKILL after the
/// grace) and started again after a backoff (0.1 s doubling to 10 s); after ``maximumDeaths``
/// ends in a row without one answer applied, drain stops with ``ExitStatus/unavailable``. A
/// handler that refuses the protocol version stops drain with ``ExitStatus/protocolError``.
final class CoprocessDelivery: DeliveryMode {
  let context: DrainContext
  let executable: URL
  let arguments: [String]
  /// Ends in a row, without an answer applied in between, after which drain gives up.
  let maximumDeaths = 5
  /// How long a handler may take to answer the greeting.
  let greetingTimeout: TimeInterval = 30
  private var handler: CoprocessHandler?
  private var flights: [String: Flight] = [:]
  private var deaths = 0
  private var restartAt = Date.distantPast

  /// A message handed to the handler and not answered yet.
  final class Flight {
    let claim: AppGroupRawMailbox.Claim
    let sentAt = Date()
    var lastRenewal = Date()
    init(_ claim: AppGroupRawMailbox.Claim) { self.claim = claim }
  }

  init(context: DrainContext, executable: URL, arguments: [String]) {
    self.context = context
    self.executable = executable
    self.arguments = arguments
  }

  /// Free places for messages in flight; 0 until a quarter of `--jobs` is free, so claims come
  /// in batches (a claim of several messages costs little more than a claim of one).
  var capacity: Int {
    guard let handler, handler.greeted, handler.failure == nil else { return 0 }
    let free = context.jobs - flights.count
    return free >= max(1, context.jobs / 4) ? free : 0
  }

  var inFlight: Int { flights.count }

  /// Sends the messages in one write; when the handler does not take them, they are put back
  /// (without counting the delivery) and it is stopped.
  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    guard let handler, handler.failure == nil else {
      for claim in claims { context.putBack(claim) }
      return
    }
    var text = ""
    for claim in claims {
      flights[DrainContext.name(claim)] = Flight(claim)
      text += DrainContext.line(claim) + "\n"
    }
    let timeout = context.handlerTimeout ?? 60
    let error = handler.send(text, within: timeout)
    if error != 0 {
      fail(
        handler,
        Errno(rawValue: error) == .timedOut
          ? "did not read its input for \(Drainer.format(seconds: timeout)) s"
          : "closed its input (\(Errno(rawValue: error)))")
    }
  }

  func poll() {
    if handler == nil, !context.stopping, Date() >= restartAt { start() }
    guard let handler else { return }
    let (lines, ended, overlong) = handler.take()
    for line in lines where handler.failure == nil { apply(line, from: handler) }
    if overlong, handler.failure == nil {
      fail(handler, "wrote a line longer than \(HandlerProtocol.maximumLine) bytes")
    }
    let now = Date()
    if handler.failure == nil, !handler.greeted,
      now.timeIntervalSince(handler.startedAt) >= greetingTimeout
    {
      fail(handler, "did not answer the greeting within \(Int(greetingTimeout)) s")
    }
    if handler.failure == nil, let timeout = context.handlerTimeout,
      let late = flights.values.first(where: { now.timeIntervalSince($0.sentAt) >= timeout })
    {
      fail(
        handler,
        "left message \(DrainContext.name(late.claim)) unanswered for "
          + "\(Drainer.format(seconds: timeout)) s", culprit: late.claim)
    }
    if handler.failure == nil, ended, !handler.process.hasExited {
      // Its output ended: give it a second to exit, so the report can say how it ended.
      let since = handler.outputEndedAt ?? now
      handler.outputEndedAt = since
      if now.timeIntervalSince(since) >= 1 { fail(handler, "closed its output") }
    }
    if handler.failure == nil, handler.process.hasExited {
      fail(handler, handler.process.outcome)
    }
    if handler.failure != nil {
      handler.stop(grace: context.killGrace, now: now)
      if handler.isGone { bury(handler) }
      return
    }
    for flight in flights.values
    where now.timeIntervalSince(flight.lastRenewal)
      >= context.renewInterval
    {
      context.renew(flight.claim)
      flight.lastRenewal = now
    }
  }

  func abandon() {
    guard let handler else { return }
    if handler.failure == nil {
      handler.failure = "stopped"
      for flight in flights.values { context.release(flight.claim) }
      flights = [:]
    }
    handler.stop(grace: context.killGrace)
  }

  /// Closes the handler's stdin and waits up to the grace for it to exit, then stops it.
  func close() {
    guard let handler else { return }
    handler.closeInput()
    let deadline = Date().addingTimeInterval(context.killGrace)
    while !handler.process.hasExited, Date() < deadline {
      context.signals.wakeup.wait(seconds: 0.1)
    }
    while !handler.process.hasExited {
      handler.stop(grace: context.killGrace)
      context.signals.wakeup.wait(seconds: 0.1)
    }
    self.handler = nil
  }

  private func start() {
    var environment = ProcessInfo.processInfo.environment
    environment["MAILBOX_NAMESPACE"] = context.location.namespace
    environment["MAILBOX_CONTAINER"] = context.location.container.path
    do {
      handler = try CoprocessHandler(
        executable: executable, arguments: arguments, environment: environment,
        greeting: HandlerProtocol.greeting(jobs: context.jobs), wakeup: context.signals.wakeup)
    } catch {
      context.fatal = CommandFailure(error.status, "--coprocess: \(error.message)")
    }
  }

  /// Applies one line from the handler: the greeting's answer first, then answers.
  private func apply(_ line: Data, from handler: CoprocessHandler) {
    guard handler.greeted else {
      switch HandlerProtocol.parseGreeting(line) {
      case .success:
        handler.greeted = true
      case .failure(let fault):
        handler.failure = fault.text
        context.fatal = CommandFailure(
          .protocolError, "--coprocess: the handler was refused: \(fault.text)")
      }
      return
    }
    switch HandlerProtocol.parseAnswer(line) {
    case .failure(let fault):
      fail(handler, "wrote \(fault.text)")
    case .success(let (id, answer)):
      guard let flight = flights.removeValue(forKey: id) else {
        fail(handler, "answered message \(id), which it does not hold")
        return
      }
      deaths = 0
      switch answer {
      case .ack: context.acknowledge(flight.claim)
      case .release: context.release(flight.claim, failure: "released it")
      case .retry(let after): context.release(flight.claim, delay: after)
      case .deadLetter(let reason): context.deadLetter(flight.claim, reason: reason)
      }
    }
  }

  /// Gives up on the handler: says why, and releases everything it holds (`culprit`, or every
  /// message when it is not known which one was at fault, with the retry policy's delay; the
  /// others at once).
  private func fail(
    _ handler: CoprocessHandler, _ reason: String, culprit: AppGroupRawMailbox.Claim? = nil
  ) {
    guard handler.failure == nil else { return }
    handler.failure = reason
    let stopping = context.stopping && flights.isEmpty
    if !stopping {
      Output.note(
        "drain: --coprocess handler (pid \(handler.process.pid)) \(reason); "
          + "\(flights.count) unanswered message\(flights.count == 1 ? "" : "s") released")
    }
    for flight in flights.values {
      if culprit == nil || flight.claim === culprit {
        context.release(flight.claim, failure: reason)
      } else {
        context.release(flight.claim)
      }
    }
    flights = [:]
  }

  /// The handler is gone: count the death, and schedule a restart or give up.
  private func bury(_ handler: CoprocessHandler) {
    self.handler = nil
    guard context.fatal == nil, !context.stopping else { return }
    deaths += 1
    if deaths >= maximumDeaths {
      context.fatal = CommandFailure(
        .unavailable,
        "--coprocess: the handler ended \(deaths) times in a row without an answer (last: "
          + "\(handler.failure ?? "ended")); giving up")
      return
    }
    restartAt = Date().addingTimeInterval(min(10, 0.1 * pow(2, Double(deaths - 1))))
  }
}
