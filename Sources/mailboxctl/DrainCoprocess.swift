import AppGroupMailbox
import Foundation
import Glibc

/// `--coprocess CMD [ARG...]`: one long-running handler speaking the handler protocol
/// (``HandlerProtocol``, docs/HANDLER-PROTOCOL.md), up to `--jobs` messages in flight.
///
/// Whatever the handler did not answer is released, never acknowledged: when it exits or
/// crashes, prints a line that is not an answer, or leaves a message unanswered past
/// `--handler-timeout`. It is then stopped (stdin closed, SIGTERM to its process group, SIGKILL
/// after the grace), and only once it exited and its stdout ended (every answer it wrote is
/// applied; at most ``outputGrace`` after its exit, for a process it left holding its stdout)
/// is what it left unanswered released; it is started again after a backoff (0.1 s doubling to
/// 10 s). After ``maximumDeaths`` ends in a row without one answer applied, drain stops with
/// ``ExitStatus/unavailable``, and at once when a handler ended, or did not answer the greeting
/// within ``greetingTimeout``, before any handler of this drain had answered it (a program that
/// does not speak the protocol, such as one written for `--exec`, or cannot start, such as a
/// script that is not there, would only do the same again; one that spoke it before and ends or
/// is slow to start again is restarted). A handler that refuses
/// the protocol version stops drain with
/// ``ExitStatus/protocolError``. On a stop signal its stdin is closed; it keeps answering what
/// it holds until it exits or ``abandon()`` stops it.
final class CoprocessDelivery: DeliveryMode {
  let context: DrainContext
  let executable: URL
  let arguments: [String]
  /// Ends in a row, without an answer applied in between, after which drain gives up.
  let maximumDeaths = 5
  /// How long a handler may take to answer the greeting: 30 s (a hidden `--greeting-timeout`
  /// sets it for tests).
  let greetingTimeout: TimeInterval
  /// Set when the handler being stopped did not answer the greeting in time: drain gives up,
  /// unless a handler answered it before (``everGreeted``).
  private var greetingMissed = false
  /// Whether a handler of this drain answered the greeting: the program speaks the protocol.
  private var everGreeted = false
  /// How long drain waits, after the handler exited, for its stdout to end (what it left in its
  /// process group gets SIGTERM at once, SIGKILL after the kill grace): then it stops reading.
  var outputGrace: TimeInterval { context.killGrace + 1 }
  private var handler: CoprocessHandler?
  private var flights: [String: Flight] = [:]
  /// Claims of other files with the id of a message in flight (docs/FORMAT.md: a copy is a
  /// second message), oldest first: answers name ids, so each is sent once the one before it
  /// is answered, and held (its lease renewed) until then.
  private var behind: [String: [Held]] = [:]

  /// A claim drain holds for the handler, its lease renewed every ``DrainContext/renewInterval``
  /// (``renewIfDue(_:now:)``). On its own: a claim held back until the message in flight with
  /// its id is answered.
  class Held {
    /// The newest claim of the message (see ``deliver(_:)``).
    var claim: AppGroupRawMailbox.Claim
    var lastRenewal = Date()
    init(_ claim: AppGroupRawMailbox.Claim) { self.claim = claim }
    /// Renews the lease when ``DrainContext/renewInterval`` has passed since the last renewal.
    func renewIfDue(_ context: DrainContext, now: Date) {
      guard now.timeIntervalSince(lastRenewal) >= context.renewInterval else { return }
      context.renew(claim)
      lastRenewal = now
    }
  }
  /// Which unanswered messages the stopping handler's failure counts against.
  private var blame = Blame.every
  private var deaths = 0
  private var restartAt = Date.distantPast

  /// A message handed to the handler and not answered yet.
  final class Flight: Held {
    /// When its line was seen written whole to the handler's input (where `--handler-timeout`
    /// counts from); nil while it waits in drain's outbox.
    var sentAt: Date?
    /// The offsets in the handler's input where the message's line starts and ends (its line
    /// feed included).
    let start: Int
    let end: Int
    /// Whether the handler can read the message whole: every byte of its line, the line feed
    /// included, is in its input (``CoprocessHandler/written``). Only then is an answer for it
    /// applied (a line without its line feed was cut when drain stopped the handler;
    /// docs/HANDLER-PROTOCOL.md), and `--handler-timeout` counts from
    /// then (``sentAt``).
    func reached(_ handler: CoprocessHandler) -> Bool { end <= handler.written }
    /// Whether a byte of its line is in the handler's input: one the handler may have read.
    /// Only once its handler is gone can drain tell whether it did (``bury(_:outputEnded:)``).
    func entered(_ handler: CoprocessHandler) -> Bool { start < handler.written }
    init(_ claim: AppGroupRawMailbox.Claim, start: Int, end: Int) {
      self.start = start
      self.end = end
      super.init(claim)
    }
  }

  /// Which unanswered messages count a handler failure (with the retry policy's delay) when
  /// they are released; the others go straight back.
  enum Blame {
    case every
    case one(AppGroupRawMailbox.Claim)
    case none
  }

  init(
    context: DrainContext, executable: URL, arguments: [String], greetingTimeout: TimeInterval = 30
  ) {
    self.context = context
    self.executable = executable
    self.arguments = arguments
    self.greetingTimeout = greetingTimeout
  }

  /// Free places for messages in flight; 0 until a quarter of `--jobs` is free, so claims come
  /// in batches (a claim of several messages costs little more than a claim of one).
  var capacity: Int {
    guard let handler, handler.greeted, handler.failure == nil, !handler.hasPendingOutput else {
      return 0
    }
    let free = context.jobs - inFlight
    return free >= max(1, context.jobs / 4) ? free : 0
  }

  var inFlight: Int { flights.count + behind.values.reduce(0) { $0 + $1.count } }

  /// Whether lines wait for room in the handler's input: the loop polls again soon.
  var hasPendingOutput: Bool { handler?.hasPendingOutput ?? false }

  /// Queues the messages' lines for the handler's input and writes what the pipe takes now,
  /// never waiting for it (``CoprocessHandler/send(_:)``); ``poll()`` writes the rest as the
  /// handler reads, renewing every lease meanwhile. When the handler closes its input or stops
  /// reading for `--handler-timeout` (60 s without it), it is stopped, and a message of whose
  /// line no byte was written never reached it: it is put back at once without counting the
  /// delivery, not held as in flight.
  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    guard let handler, handler.failure == nil else {
      for claim in claims { context.putBack(claim) }
      return
    }
    var text = ""
    let start = handler.queuedEnd
    for claim in claims {
      let id = DrainContext.name(claim)
      if let held = flights[id] {
        // Its lease ran out (drain was stalled) and it was recovered, then claimed again while
        // the handler still has it: the old claim is gone, the handler's answer is for this one.
        // Still there, it is another file with the same id: it waits behind this one.
        if Self.isGone(held.claim) {
          held.claim = claim
        } else {
          behind[id, default: []].append(Held(claim))
        }
        continue
      }
      let lineStart = start + text.utf8.count
      text += DrainContext.line(claim) + "\n"
      flights[id] = Flight(claim, start: lineStart, end: start + text.utf8.count)
    }
    guard !text.isEmpty else { return }
    handler.send(text)
    checkInput(handler, now: Date())
  }

  /// Whether `claim` no longer exists (recovered after its lease ran out): a renewal says so.
  /// Any other failure leaves it held.
  private static func isGone(_ claim: AppGroupRawMailbox.Claim) -> Bool {
    do {
      try claim.renew()
      return false
    } catch AppGroupMailboxError.claimNoLongerExists {
      return true
    } catch {
      return false
    }
  }

  func poll() {
    if handler == nil, !context.stopping, Date() >= restartAt { start() }
    guard let handler else { return }
    handler.flush()
    // `ended` comes with the last lines: once it is true, every line the handler wrote is here.
    let (lines, ended, overlong) = handler.take()
    for line in lines { apply(line, from: handler) }
    let now = Date()
    checkInput(handler, now: now)
    check(handler, ended: ended, overlong: overlong, now: now)
    if context.signals.stopSignal != nil {
      // Shutdown: nothing more comes but the rest of the line being written (the handler gets
      // whole lines only), then end of file; it answers what it holds and exits.
      let underway = flights.values.filter { $0.entered(handler) && !$0.reached(handler) }
      handler.finishInput(at: underway.map(\.end).max() ?? handler.written)
      putBackUnsent(handler)
    }
    if handler.failure != nil {
      handler.stop(grace: context.killGrace, now: now)
      // Its input is closed now: a message of whose line it got no byte never reached it,
      // whatever the failure was, and goes back at once, its delivery not counted.
      putBackUnsent(handler)
      if handler.process.hasExited {
        let exitedAt = handler.exitedAt ?? now
        handler.exitedAt = exitedAt
        // Nothing goes back while a process of its group may still work on it (SIGKILL
        // follows the grace; see ``ChildProcess/groupMayRun``).
        if ended || now.timeIntervalSince(exitedAt) >= outputGrace,
          !handler.process.groupMayRun
        {
          bury(handler, outputEnded: ended)
          return
        }
      }
    }
    // Still answering (also while it is being stopped): keep the leases.
    for held in flights.values { held.renewIfDue(context, now: now) }
    for held in behind.values.joined() { held.renewIfDue(context, now: now) }
  }

  /// Puts back, uncounted, every claim held back behind a message in flight with its id (the
  /// handler never had them).
  private func putBackWaiting() {
    for held in behind.values.joined() { context.putBack(held.claim) }
    behind = [:]
  }

  /// Stops the handler (stdin closed, SIGTERM, SIGKILL after the grace: call repeatedly); what
  /// it answers until it is gone is applied, the rest released without counting a failure.
  func abandon() {
    guard let handler else { return }
    if handler.failure == nil {
      handler.failure = "stopped"
      blame = .none
    }
    handler.stop(grace: context.killGrace)
  }

  /// Closes the handler's stdin and waits for it to exit: up to the kill grace at the end of a
  /// run (also one ended by an error), after a stop signal until `--shutdown-timeout` from the
  /// signal (``DrainContext/secondsSinceStopSignal()``), not at all after a second one. Then its
  /// process group gets SIGTERM (what an exited handler left in it too, always), SIGKILL after
  /// the grace, and drain returns once none of the group can run (``ChildProcess/groupMayRun``).
  func close() {
    guard let handler else { return }
    handler.closeInput()
    let start = Date()
    let signalled = context.signals.stopSignal != nil
    func outOfPatience() -> Bool {
      if context.signals.stopCount > 1 { return true }
      if signalled { return (context.secondsSinceStopSignal() ?? 0) >= context.shutdownTimeout }
      return Date().timeIntervalSince(start) >= context.killGrace
    }
    while !handler.process.hasExited, !outOfPatience() {
      context.signals.wakeup.wait(seconds: 0.1)
    }
    handler.stop(grace: context.killGrace)
    while !handler.process.hasExited || handler.process.groupMayRun {
      context.signals.wakeup.wait(seconds: 0.1)
      handler.stop(grace: context.killGrace)
    }
    self.handler = nil
  }

  /// Gives up on a handler whose input failed: it closed it (EPIPE), or took nothing of what
  /// waits for `--handler-timeout` (60 s without it). ``poll()`` then stops it and puts back,
  /// uncounted, the messages whose line it did not get whole.
  private func checkInput(_ handler: CoprocessHandler, now: Date) {
    // Before its greeting's answer no message was sent: how it ended (its exit, the greeting
    // timeout) says more than a greeting it did not read.
    guard handler.failure == nil, handler.greeted else { return }
    let timeout = context.handlerTimeout ?? 60
    if let error = handler.writeError {
      fail(handler, "closed its input (\(Errno(rawValue: error)))")
    } else if let since = handler.blockedSince, now.timeIntervalSince(since) >= timeout {
      fail(handler, "did not read its input for \(Output.seconds(timeout)) s")
    }
  }

  /// Puts back, uncounted, every message in flight of whose line the handler's input took no
  /// byte (its input is closed: it never gets them). One it took a part of stays until the
  /// handler is gone: it may have read that part (a line longer than the pipe holds, read in
  /// part by a handler that then died, is a delivery; ``bury(_:outputEnded:)`` tells).
  private func putBackUnsent(_ handler: CoprocessHandler) {
    for (id, flight) in flights where !flight.entered(handler) {
      flights[id] = nil
      context.putBack(flight.claim)
    }
    putBackWaiting()
  }

  /// Gives up on a handler that failed: it ended (exited, closed its output), wrote a line too
  /// long, did not answer the greeting, or was late with a message.
  private func check(_ handler: CoprocessHandler, ended: Bool, overlong: Bool, now: Date) {
    guard handler.failure == nil else { return }
    if overlong { fail(handler, "wrote a line longer than \(HandlerProtocol.maximumLine) bytes") }
    if !handler.greeted, now.timeIntervalSince(handler.startedAt) >= greetingTimeout {
      greetingMissed = true
      fail(
        handler,
        "did not answer the greeting within \(Output.seconds(greetingTimeout)) s (a --coprocess handler "
          + "speaks docs/HANDLER-PROTOCOL.md; a program that takes one message and exits is for "
          + "--exec)")
    }
    for flight in flights.values where flight.sentAt == nil && flight.reached(handler) {
      flight.sentAt = now
    }
    // The late message it holds longest (its line earliest in its input): a handler working
    // on one at a time is late with that one, not with those waiting behind it.
    if let timeout = context.handlerTimeout,
      let late = flights.values.filter({
        $0.sentAt.map { now.timeIntervalSince($0) >= timeout } ?? false
      }).min(by: { $0.end < $1.end })
    {
      fail(
        handler,
        "left message \(DrainContext.name(late.claim)) unanswered for "
          + "\(Output.seconds(timeout)) s", culprit: late.claim)
    }
    if ended, !handler.process.hasExited {
      // Its output ended: give it a second to exit, so the report can say how it ended.
      let since = handler.outputEndedAt ?? now
      handler.outputEndedAt = since
      if now.timeIntervalSince(since) >= 1 { fail(handler, "closed its output") }
    }
    if handler.process.hasExited { fail(handler, handler.process.outcome) }
  }

  private func start() {
    blame = .every
    var environment = ProcessInfo.processInfo.environment
    environment["MAILBOX_NAMESPACE"] = context.location.namespace
    environment["MAILBOX_CONTAINER"] = context.location.container.path
    do {
      handler = try CoprocessHandler(
        executable: executable, arguments: arguments, environment: environment,
        greeting: HandlerProtocol.greeting(jobs: context.jobs), wakeup: context.signals.wakeup)
    } catch {
      context.fail(CommandFailure(error.status, "--coprocess: \(error.message)"))
    }
  }

  /// Applies one line from the handler: the greeting's answer first, then answers (also while
  /// it is being stopped: an answer written is work done).
  private func apply(_ line: Data, from handler: CoprocessHandler) {
    guard handler.greeted else {
      switch HandlerProtocol.parseGreeting(line) {
      case .success:
        // Also when it failed since (its exit can be seen before its output is read): it
        // speaks the protocol, so its end is restarted, not given up on at once.
        handler.greeted = true
      case .failure where handler.failure != nil:
        return
      case .failure(let fault):
        handler.failure = fault.text
        context.fail(
          CommandFailure(.protocolError, "--coprocess: the handler was refused: \(fault.text)"))
      }
      return
    }
    switch HandlerProtocol.parseAnswer(line) {
    case .failure(let fault):
      fail(handler, "wrote \(fault.text)")
    case .success(let (id, answer)):
      // A message whose whole line is not in its input yet is not the handler's to answer (a
      // stale or guessed id, or a line cut when its input was closed): acting on it would
      // delete, release or dead-letter a message it never had, or had only part of. Every
      // byte it could have read is counted in `written` (its writes are this thread's, before
      // this look).
      let flight = flights[id]
      if let flight, flight.entered(handler), !flight.reached(handler) {
        Output.note(
          "drain: --coprocess handler (pid \(handler.process.pid)) answered message "
            + "\(Output.shown(id, limit: 64)) before it had its whole line; ignored")
        return
      }
      guard let flight, flight.reached(handler) else {
        // Answered twice, or a message never sent: nothing to do, and no fault of the others.
        Output.note(
          "drain: --coprocess handler (pid \(handler.process.pid)) answered message "
            + "\(Output.shown(id, limit: 64)), "
            + "which it does not hold; ignored")
        return
      }
      flights[id] = nil
      deaths = 0
      switch answer {
      case .ack: context.acknowledge(flight.claim)
      case .release: context.release(flight.claim, failure: "released it")
      case .retry(let after): context.retry(flight.claim, after: after)
      case .deadLetter(let reason): context.deadLetter(flight.claim, reason: reason)
      }
      // The next file with this id goes out now; one whose claim is gone (its lease ran out
      // while drain was stalled, and it was recovered: another consumer, or drain's own newer
      // claim behind it, has it now) is dropped, not sent on a claim drain no longer holds.
      while var waiting = behind[id], !waiting.isEmpty {
        let next = waiting.removeFirst()
        behind[id] = waiting.isEmpty ? nil : waiting
        if !Self.isGone(next.claim) {
          deliver([next.claim])
          break
        }
      }
    }
  }

  /// Gives up on the handler: records why and which unanswered messages that counts against
  /// (`culprit`, or every one when it is not known which was at fault; none after a stop
  /// signal closed its stdin); ``bury(_:outputEnded:)`` releases them once it is gone.
  private func fail(
    _ handler: CoprocessHandler, _ reason: String, culprit: AppGroupRawMailbox.Claim? = nil
  ) {
    guard handler.failure == nil else { return }
    handler.failure = reason
    if let culprit {
      blame = .one(culprit)
    } else {
      blame = context.signals.stopSignal != nil ? .none : .every
    }
  }

  /// The handler is gone (exited, every line it wrote applied, unless a process it left held
  /// its stdout past ``outputGrace``): releases what it left unanswered, counts the death, and
  /// schedules a restart or gives up.
  private func bury(_ handler: CoprocessHandler, outputEnded: Bool) {
    self.handler = nil
    if handler.greeted { everGreeted = true }
    let missedGreeting = greetingMissed
    greetingMissed = false
    let reason = handler.failure ?? "ended"
    // A line that never left its input's pipe never reached it: that message goes back
    // uncounted, whatever the blame. Known only once its output ended (a process it left
    // holding its output may hold its input too, and read on).
    let read = outputEnded ? handler.inputRead : nil
    let unread = flights.filter { _, flight in read.map { flight.start >= $0 } ?? false }
    if !(context.stopping && flights.isEmpty) {
      let held =
        outputEnded ? "" : " (its output stayed open \(Int(outputGrace)) s after it exited)"
      let untouched = unread.isEmpty ? "" : " (\(unread.count) of them never read: uncounted)"
      Output.note(
        "drain: --coprocess handler (pid \(handler.process.pid)) \(reason)\(held); "
          + "\(Output.counted(flights.count, "unanswered message")) released"
          + untouched)
    }
    for (id, flight) in unread {
      flights[id] = nil
      context.putBack(flight.claim)
    }
    for flight in flights.values {
      switch blame {
      case .every: context.release(flight.claim, failure: reason)
      case .one(let culprit) where culprit === flight.claim:
        context.release(flight.claim, failure: reason)
      default:
        // Not at fault: counted when it had the message whole, else (its line cut when drain
        // closed its input) straight back uncounted.
        if flight.reached(handler) {
          context.release(flight.claim)
        } else {
          context.putBack(flight.claim)
        }
      }
    }
    flights = [:]
    putBackWaiting()
    handler.abandonOutput()
    handler.process.reap()
    guard context.fatal == nil, !context.stopping else { return }
    // No handler of this drain has spoken the protocol yet: a program that ends, or stays
    // silent, before it answers the greeting (a missing script, a module it cannot import, a
    // program written for --exec) would do the same again.
    if !everGreeted {
      let why = missedGreeting ? reason : "did not answer the greeting (\(reason))"
      context.fail(CommandFailure(.unavailable, "--coprocess: the handler \(why); giving up"))
      return
    }
    deaths += 1
    if deaths >= maximumDeaths {
      context.fail(
        CommandFailure(
          .unavailable,
          "--coprocess: the handler ended \(deaths) times in a row without an answer (last: "
            + "\(reason)); giving up"))
      return
    }
    restartAt = Date().addingTimeInterval(min(10, 0.1 * pow(2, Double(deaths - 1))))
  }
}
