import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// What every delivery mode of `drain` shares: the mailbox, the settings, the counts for the
/// summary, and the one place where a claim is finished (acknowledged, released, dead-lettered).
/// Used by the coordinating thread only.
final class DrainContext {
  let mailbox: AppGroupRawMailbox
  let location: MailboxOptions.Location
  let signals: Signals
  let retryPolicy: AppGroupMailboxRetryPolicy
  /// `--handler-timeout`: the longest a handler may take for one message.
  let handlerTimeout: TimeInterval?
  /// `--jobs`: messages in flight at once.
  let jobs: Int
  /// Seconds between SIGTERM and SIGKILL for a handler being stopped.
  let killGrace: TimeInterval = 5
  /// `--shutdown-timeout`: after a stop signal, how long handlers may take to finish what they
  /// hold (and a long-running handler to exit at end of input) before they are stopped.
  let shutdownTimeout: TimeInterval

  var delivered = 0
  var released = 0
  var failedHandlers = 0
  /// Messages the handler asked to retry in this round: claims pass over them until nothing
  /// else is claimable, so a message retried at once neither spins alone nor keeps the messages
  /// behind it waiting (see ``Drainer``).
  var retried: Set<UUID> = []
  /// The failure that ends the drain (claiming stops, what is in flight is finished): the
  /// first one (``fail(_:letRunningFinish:)``), the cause of those that follow from it.
  private(set) var fatal: CommandFailure?

  /// When a failure that lets the handlers in flight finish was recorded
  /// (``fail(_:letRunningFinish:)``).
  private var gracefulFailureAt: Date?

  /// Records `failure` as the one that ends the drain, unless one was recorded already (a
  /// deleted mailbox, say, makes the releases after it fail too: the exit status and the error
  /// line are the deletion's). With `letRunningFinish` (a handler that could not be started:
  /// nothing against those running), what is in flight may finish, for `--shutdown-timeout`
  /// seconds from now as after a stop signal; otherwise it is abandoned at once.
  ///
  /// A failure that does not let them finish, met while they do (an acknowledge refused, say),
  /// is no consequence of the first: it ends the wait at once and becomes the drain's error,
  /// the first printed as a note.
  func fail(_ failure: CommandFailure, letRunningFinish: Bool = false) {
    if let first = fatal {
      guard gracefulFailureAt != nil, !letRunningFinish else { return }
      Output.note("drain: \(first.message)")
      gracefulFailureAt = nil
    }
    fatal = failure
    if letRunningFinish { gracefulFailureAt = Date() }
  }

  /// Prints the dead letters the mailbox's `maxDeliveryAttempts` makes; told about the handler's.
  let deadLetters: DeadLetterReport

  init(
    mailbox: AppGroupRawMailbox, location: MailboxOptions.Location, signals: Signals,
    retryPolicy: AppGroupMailboxRetryPolicy, handlerTimeout: TimeInterval?,
    shutdownTimeout: TimeInterval, jobs: Int, deadLetters: DeadLetterReport
  ) {
    self.deadLetters = deadLetters
    self.shutdownTimeout = shutdownTimeout
    self.mailbox = mailbox
    self.location = location
    self.signals = signals
    self.retryPolicy = retryPolicy
    self.handlerTimeout = handlerTimeout
    self.jobs = jobs
    // A wait for the namespace lock that another process holds for long (stopped, or by hand)
    // ends as the run does: polled once a stop signal came, given up on a second one or
    // --shutdown-timeout after the first.
    let wait = StoppingLockWait(signals: signals, timeout: shutdownTimeout)
    LockWait.decide { wait.verdict() }
  }

  /// When `--timeout` ends the drain (set by ``Drainer``), nil without one.
  var deadline: Date?

  /// Whether `--timeout` has passed: no more claims.
  var timeUp: Bool { deadline.map { Date() >= $0 } ?? false }

  /// How long a line stdout's reader has not taken yet may still take after `--timeout`:
  /// `--shutdown-timeout` seconds, as a handler in flight after a stop signal; then a write
  /// still blocked is given up and its message put back (a reader that stopped reading must not
  /// keep the drain for ever; ``FileDescriptorWriter/interruptBlockedWrites(after:)``). Nil
  /// without one.
  var writeDeadline: Date? { deadline?.addingTimeInterval(shutdownTimeout) }

  /// Whether claiming must stop: a stop signal or a fatal error.
  var stopping: Bool { signals.stopSignal != nil || fatal != nil }

  /// Whether what is in flight must be abandoned now (its messages released, its handlers
  /// stopped): after a second stop request (a failure that lets it finish counts as the
  /// first), a fatal error that does not let it finish, or `--shutdown-timeout` seconds after
  /// the first stop request.
  func mustAbandonInFlight() -> Bool {
    let requests = signals.stopCount + (gracefulFailureAt == nil ? 0 : 1)
    if requests > 1 || (fatal != nil && gracefulFailureAt == nil) { return true }
    let sinceFailure = gracefulFailureAt.map { Date().timeIntervalSince($0) }
    let since = [secondsSinceStopSignal(), sinceFailure].compactMap { $0 }.max()
    return (since ?? 0) >= shutdownTimeout
  }

  /// When the first stop signal was seen (``secondsSinceStopSignal()``).
  private var stopSignalSeenAt: Date?

  /// Seconds since the first stop signal was seen, or nil before one: the one clock of
  /// `--shutdown-timeout`, for the handlers in flight and a `--coprocess` handler's exit after
  /// them alike (the drain loop asks at every turn, so it starts within one poll of the signal).
  func secondsSinceStopSignal() -> TimeInterval? {
    guard signals.stopSignal != nil else { return nil }
    let seen = stopSignalSeenAt ?? Date()
    stopSignalSeenAt = seen
    return Date().timeIntervalSince(seen)
  }

  /// Seconds between lease renewals of a message in flight: a third of the lease.
  var renewInterval: TimeInterval { mailbox.limits.claimTimeout / 3 }

  /// Acknowledges `claim`: it has been delivered.
  func acknowledge(_ claim: AppGroupRawMailbox.Claim) {
    do {
      try claim.acknowledge()
      delivered += 1
    } catch AppGroupMailboxError.claimNoLongerExists {
      Output.note(
        "drain: message \(Self.name(claim)): the claim was gone before the acknowledge "
          + "(recovered by another consumer after its lease ran out, which delivers it again, "
          + "or acknowledged or released with its claim token)")
    } catch {
      fail(CommandFailure(error, while: ""))
    }
  }

  /// Returns `claim` to the mailbox. `failure` (how the handler failed) counts a handler
  /// failure, and without an explicit `delay` the retry policy's delay applies and is
  /// reported; with neither, the message goes straight back (stopped by us, not at fault).
  /// A failed delivery that was the last the mailbox's `maxDeliveryAttempts` allows is not
  /// released to wait out a retry delay for nothing: it goes to quarantine as a dead letter now,
  /// as the next claim would move it (the dead-letter report prints the line).
  func release(
    _ claim: AppGroupRawMailbox.Claim, failure: String? = nil, delay: TimeInterval? = nil
  ) {
    let seconds =
      delay ?? (failure == nil ? 0 : retryPolicy.delay(afterDelivery: claim.deliveryCount))
    if failure != nil { failedHandlers += 1 }
    if let failure, let limit = mailbox.settings.maxDeliveryAttempts,
      claim.deliveryCount >= limit
    {
      Output.note(
        "drain: message \(Self.name(claim)): handler \(failure); that was its last delivery")
      do {
        try claim.deadLetter()
      } catch AppGroupMailboxError.claimNoLongerExists {
        // Recovered by another consumer already: its next claim dead-letters it.
      } catch {
        fail(CommandFailure(error, while: "dead letter"))
      }
      return
    }
    do {
      try claim.release(retryAfter: seconds)
      released += 1
      if let failure {
        Output.note(
          "drain: message \(Self.name(claim)): handler \(failure); released, retry in "
            + "\(Output.seconds(seconds)) s")
      }
    } catch AppGroupMailboxError.claimNoLongerExists {
      // Recovered by another consumer already: nothing of ours to release.
      if let failure {
        Output.note(
          "drain: message \(Self.name(claim)): handler \(failure); its claim was already "
            + "recovered")
      }
    } catch {
      fail(CommandFailure(error, while: "release"))
      // delayed/ cannot take it (a full disk): back in line at once rather than held until
      // its lease runs out; the drain still stops with the error.
      if seconds > 0 { try? claim.release() }
    }
  }

  /// Returns `claim` as its handler's `retry` answer asks: claimable after `after` seconds, not a
  /// handler failure and not a delivery attempt (its delivery count stays what it was before
  /// this claim, so `maxDeliveryAttempts` never makes a dead letter of a message its handler
  /// only could not take yet, such as a forward to a broker that is down; its lifetime still
  /// bounds it). This drain passes over it until it has tried the rest (``retried``).
  func retry(_ claim: AppGroupRawMailbox.Claim, after: TimeInterval) {
    retried.insert(claim.id)
    releaseUncounted(claim, after: after)
  }

  /// Puts back `claim`, which no handler had (a handler that could not be started or took
  /// nothing), without counting the delivery, so it never becomes a dead letter for that.
  func putBack(_ claim: AppGroupRawMailbox.Claim) {
    releaseUncounted(claim, after: 0)
    putBackCount += 1
  }

  /// How many claims ``putBack(_:)`` returned: no handler had them, so `--limit` does not
  /// count them (a handler that died with messages unread in its pipe ended a `--limit 1`
  /// drain having delivered none).
  private(set) var putBackCount = 0

  /// Releases `claim` with its delivery count as before the claim, claimable after `after`
  /// seconds (0: at once); a claim another consumer recovered already is left alone.
  private func releaseUncounted(_ claim: AppGroupRawMailbox.Claim, after: TimeInterval) {
    do {
      try claim.releaseUndelivered(retryAfter: after)
      released += 1
    } catch AppGroupMailboxError.claimNoLongerExists {
      // Recovered by another consumer already: nothing of ours to put back.
    } catch {
      fail(CommandFailure(error, while: "release"))
      if after > 0 { try? claim.releaseUndelivered(retryAfter: 0) }  // as in release(_:...)
    }
  }

  /// Moves `claim` to quarantine as a dead letter, as the handler asked (`reason` is the
  /// handler's own text, shown on one line, at most 200 characters).
  func deadLetter(_ claim: AppGroupRawMailbox.Claim, reason: String) {
    let shown = Output.shown(reason)
    deadLetters.handlerChose(claim.id)
    do {
      try claim.deadLetter()
      Output.note("drain: message \(Self.name(claim)): dead-lettered by the handler: \(shown)")
    } catch AppGroupMailboxError.claimNoLongerExists {
      Output.note("drain: message \(Self.name(claim)): its claim was already recovered")
    } catch {
      fail(CommandFailure(error, while: "dead-letter"))
    }
  }

  /// Renews `claim`'s lease; a claim recovered by someone else is left to its fate (the
  /// acknowledge or release that follows reports it).
  func renew(_ claim: AppGroupRawMailbox.Claim) {
    try? claim.renew()
  }

  /// A message's id as shown in diagnostics (lower-case UUID).
  static func name(_ claim: AppGroupRawMailbox.Claim) -> String {
    claim.id.uuidString.lowercased()
  }

  /// The message as one JSON line (without the line break): `{"id", "enqueuedAt",
  /// "deliveryCount", "messageType", "payloadVersion", "priority", "message"}`, the message's bytes
  /// embedded as stored. The one format of stdout, `--output`, the handler protocol and (after
  /// its token and lease) `claim --json`.
  static func line(_ claim: AppGroupRawMailbox.Claim) -> String {
    var object = JSONObject()
    add(claim, to: &object)
    return object.text
  }

  /// Adds the members of ``line(_:)`` to `object` (`claim --json` puts its token first).
  static func add(_ claim: AppGroupRawMailbox.Claim, to object: inout JSONObject) {
    object.add("id", name(claim))
    object.add("enqueuedAt", date: claim.enqueuedAt)
    object.add("deliveryCount", claim.deliveryCount)
    object.add("messageType", claim.messageType)
    object.add("payloadVersion", claim.payloadVersion)
    object.add("priority", claim.priority)
    object.add("message", rawJSON: claim.payload)
  }
}

/// How `drain` hands messages over: stdout, a file, one program per message, or a long-running
/// handler. The coordinating thread calls every method.
protocol DeliveryMode: AnyObject {
  /// How many more claimed messages it takes now (0 while busy or restarting).
  var capacity: Int { get }
  /// Messages handed over but not finished yet.
  var inFlight: Int { get }
  /// Whether output waits for room in a handler's pipe: ``poll()`` writes more of it, so the
  /// loop polls again within ``Drainer/writingPoll`` instead of waiting for a wake-up.
  var hasPendingOutput: Bool { get }
  /// Takes claimed messages (at most ``capacity``), oldest first.
  func deliver(_ claims: [AppGroupRawMailbox.Claim])
  /// Applies what finished, renews leases, enforces timeouts, restarts handlers.
  func poll()
  /// Gives up on what is in flight: stops handlers (SIGTERM, then SIGKILL after the grace; call
  /// repeatedly) and releases their messages once they are stopped.
  func abandon()
  /// Ends the mode once nothing is in flight (a long-running handler gets end of file).
  func close()
}

extension DeliveryMode {
  var hasPendingOutput: Bool { false }
}
