import AppGroupMailbox
import Foundation
import Glibc

/// The drain loop: one coordinating thread claims only what its delivery mode can take now,
/// lets the mode supervise what is in flight, and stops cleanly on signals, `--limit`,
/// `--timeout`, or (without `--follow`) an empty mailbox.
final class Drainer {
  let context: DrainContext
  let mode: any DeliveryMode
  let limit: Int?
  let timeout: Double?
  let follow: Bool
  let report: DrainReport
  /// The longest idle wait of `--follow` between looks at the mailbox when nothing wakes it
  /// (a bound against wall-clock steps, not a poll: wake-ups, due times and leases end it).
  private let idleRecheck: TimeInterval = 60
  /// How soon the loop polls again while a handler's pipe holds no room for what waits for it
  /// (nothing wakes the loop when a pipe drains).
  static let writingPoll: TimeInterval = 0.01
  private var started = 0

  init(
    context: DrainContext, mode: any DeliveryMode, limit: Int?, timeout: Double?,
    follow: Bool, report: DrainReport
  ) {
    self.context = context
    self.mode = mode
    self.limit = limit
    self.timeout = timeout
    self.follow = follow
    self.report = report
  }

  func run() throws -> ExitStatus {
    let signals = context.signals
    let deadline = timeout.map { report.startTime.addingTimeInterval($0) }
    context.deadline = deadline
    // A write to stdout blocked on a reader that stopped reading must not outlast --timeout.
    if let writeDeadline = context.writeDeadline {
      FileDescriptorWriter.interruptBlockedWrites(after: writeDeadline)
    }
    let wakeUps = follow ? try MailboxWakeUps(context.mailbox, wakeup: signals.wakeup) : nil
    defer { wakeUps?.close() }
    while true {
      _ = context.secondsSinceStopSignal()  // starts the --shutdown-timeout clock
      mode.poll()
      do {
        _ = try wakeUps?.take()
      } catch {
        context.fail(error)
      }
      // The limit ends the run once nothing is in flight: a message in flight may still come
      // back unhandled (its handler ended before reading it), and is then claimed again.
      let limitReached = limit.map { handedOut >= $0 } ?? false
      if context.stopping || context.timeUp || (limitReached && mode.inFlight == 0) { break }
      var empty = false
      var blocked = false
      // `--timeout` is looked at before every claim: a mode that takes message after message
      // (stdout, --output) never leaves this loop while messages are pending.
      while !context.stopping, !context.timeUp {
        let wanted = min(mode.capacity, remaining)
        blocked = mode.capacity == 0
        if wanted == 0 { break }
        let claims = claim(wanted)
        if claims.isEmpty {
          empty = true
          break
        }
        started += claims.count
        mode.deliver(claims)
      }
      report.showProgress(running: mode.inFlight)
      if mode.inFlight == 0 && !blocked {
        if !empty && !context.stopping { continue }
        guard wakeUps != nil, !context.stopping else { break }
        signals.wakeup.waitCoalescing(seconds: idleTimeout(deadline: deadline))
        continue
      }
      // Something is in flight, or the mode cannot take messages yet (a handler starting).
      let wait =
        mode.hasPendingOutput ? Self.writingPoll : blocked && mode.inFlight == 0 ? 0.05 : 0.25
      signals.wakeup.waitCoalescing(seconds: min(wait, renewalPoll))
    }
    finishInFlight()
    mode.close()
    report.finish()
    if let fatal = context.fatal { throw fatal }
    if signals.stopSignal != nil { return signals.stoppedStatus }
    return context.failedHandlers > 0 ? .temporaryFailure : .success
  }

  /// The longest wait while messages are in flight: half the time between lease renewals, so
  /// ``DeliveryMode/poll()`` renews each lease at most half a renewal interval late, well
  /// within the lease, however short `--claim-timeout` is (a wait of 0.25 s let a lease of
  /// 0.2 s run out under a handler still at work).
  private var renewalPoll: TimeInterval { context.renewInterval / 2 }

  /// The claims `--limit` counts: those claimed and not put back unhandled.
  private var handedOut: Int { started - context.putBackCount }

  /// How many more messages `--limit` allows.
  private var remaining: Int { limit.map { max(0, $0 - handedOut) } ?? Int.max }

  /// Claims up to `count` pending messages (due delayed messages are made pending first),
  /// passing over those the handler asked to retry in this round (``DrainContext/retried``);
  /// empty when there is none (or on a fatal error, recorded in the context). When only those
  /// are left, `--follow` starts a new round (claims them again); without it the run ends and
  /// leaves them for a later one: a message its handler keeps retrying at once neither spins
  /// nor keeps the messages behind it from their turn.
  private func claim(_ count: Int) -> [AppGroupRawMailbox.Claim] {
    do {
      let mailbox = context.mailbox
      let claims = try mailbox.claimPending(limit: count, passingOver: context.retried)
      guard claims.isEmpty, follow, !context.retried.isEmpty else { return claims }
      context.retried = []
      return try mailbox.claimPending(limit: count, passingOver: [])
    } catch {
      context.fail(CommandFailure(error, while: ""))
      return []
    }
  }

  /// How long `--follow` may wait with nothing pending and nothing running: until a wake-up
  /// (the `Wakeup` ends the wait early), the next due time of a delayed message (the claim that
  /// follows makes it pending), the earliest lease of another consumer's claim (the claim that
  /// follows recovers it if abandoned; 1 s when it ran out but is still there), the next look
  /// at an entry a claim skipped for now (a young hard link), `--timeout`, or ``idleRecheck``,
  /// whichever comes first.
  private func idleTimeout(deadline: Date?) -> TimeInterval {
    let mailbox = context.mailbox
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

  /// Lets what is in flight finish: without a stop request, as long as it takes (bounded by
  /// `--handler-timeout`); after a stop signal or a handler that could not be started, for
  /// `--shutdown-timeout` seconds (at once after a second signal or any other fatal error),
  /// then the mode abandons it, releasing its messages
  /// (``DrainContext/mustAbandonInFlight()``).
  private func finishInFlight() {
    while mode.inFlight > 0 {
      mode.poll()
      if context.stopping, context.mustAbandonInFlight() { mode.abandon() }
      if mode.inFlight == 0 { break }
      context.signals.wakeup.waitCoalescing(
        seconds: min(mode.hasPendingOutput ? Self.writingPoll : 0.1, renewalPoll))
      report.showProgress(running: mode.inFlight)
    }
  }
}
