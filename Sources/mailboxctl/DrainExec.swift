import AppGroupMailbox
import Foundation
import Glibc

/// `--exec CMD [ARG...]`: one program per message (see ``HandlerRun``), up to `--jobs` at once.
/// Exit status 0 acknowledges the message as soon as the program exits; anything else, or
/// `--handler-timeout`, releases it with the retry policy's delay. A program drain stopped
/// (a stop signal, then `--shutdown-timeout`) is never acknowledged, whatever its exit status:
/// its message goes straight back.
final class ExecDelivery: DeliveryMode {
  let context: DrainContext
  let executable: URL
  let arguments: [String]
  private var running: [HandlerRun] = []
  /// The stdin writers of handlers that exited before a process they left running read all
  /// of their message (see ``PayloadFeed``): joined once they end, and at the latest by
  /// ``close()``.
  private var feeds: [PayloadFeed] = []

  init(context: DrainContext, executable: URL, arguments: [String]) {
    self.context = context
    self.executable = executable
    self.arguments = arguments
  }

  var capacity: Int { context.jobs - running.count }
  var inFlight: Int { running.count }

  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    for (index, claim) in claims.enumerated() {
      do {
        running.append(
          try HandlerRun(
            executable: executable, arguments: arguments, claim: claim,
            location: context.location, wakeup: context.signals.wakeup))
      } catch {
        for unstarted in claims[index...] { context.putBack(unstarted) }
        // Nothing against the handlers running: they may finish, as after a stop signal.
        context.fail(
          CommandFailure(error.status, "--exec: \(error.message)"), letRunningFinish: true)
        if !running.isEmpty {
          Output.note(
            "drain: a handler could not be started (the error follows at exit); claiming "
              + "stopped, and the \(Output.counted(running.count, "handler")) running may "
              + "finish within --shutdown-timeout (\(Output.seconds(context.shutdownTimeout)) s) "
              + "before being stopped; a stop signal stops them now")
        }
        return
      }
    }
  }

  /// Acknowledges or releases every handler that has exited, then renews leases of long
  /// handlers and enforces `--handler-timeout` (SIGTERM to the handler's process group, then
  /// SIGKILL after the grace).
  ///
  /// A message goes back only once no process of its handler's group may still work on it:
  /// the group of a handler that failed, timed out or was stopped gets SIGTERM when the handler
  /// exits (also what it left running), SIGKILL after the grace, and the message waits
  /// (its lease renewed) until the group has no running member or SIGKILL was sent
  /// (``ChildProcess/groupMayRun``). A handler that exited 0 is acknowledged at once, whatever
  /// it left running.
  func poll() {
    let now = Date()
    running.removeAll { run in
      guard run.hasExited else { return false }
      // Judged once, when it is first seen exited (stopping what it left behind below is no
      // stop of the handler).
      let verdict = run.verdict ?? run.judge()
      run.verdict = verdict
      if verdict != .finished {
        run.stop(grace: context.killGrace, now: now)
        if run.process.groupMayRun { return false }
      }
      run.feed.handlerExited()
      feeds.append(run.feed)
      switch verdict {
      case .finished: context.acknowledge(run.claim)
      // Stopped by a stop signal: whatever its exit status (many programs exit 0 on SIGTERM),
      // it was interrupted, not finished; it did not fail either: its message goes straight
      // back.
      case .interrupted: context.release(run.claim)
      case .failed: context.release(run.claim, failure: run.outcome)
      }
      return true
    }
    joinEndedFeeds()
    for run in running {
      if !run.hasExited {
        if let timeout = context.handlerTimeout, now.timeIntervalSince(run.startedAt) >= timeout {
          run.timedOut = true
          run.stop(grace: context.killGrace, now: now)
        } else if run.stopRequested {
          run.stop(grace: context.killGrace, now: now)
        }
      }
      if now.timeIntervalSince(run.lastRenewal) >= context.renewInterval {
        context.renew(run.claim)
        run.lastRenewal = now
      }
    }
  }

  func abandon() {
    for run in running { run.stop(grace: context.killGrace) }
    for feed in feeds { feed.abandon() }
  }

  /// Waits for the stdin writers still going: each ends when its reader has all of the message,
  /// is gone, or read nothing for ``PayloadFeed/stallLimit`` seconds, and at once after a stop
  /// signal.
  func close() {
    while !feeds.isEmpty {
      if context.stopping { feeds.forEach { $0.abandon() } }
      joinEndedFeeds()
      if !feeds.isEmpty { context.signals.wakeup.waitCoalescing(seconds: 0.1) }
    }
  }

  private func joinEndedFeeds() {
    feeds.removeAll { feed in
      guard feed.hasEnded else { return false }
      feed.join()
      return true
    }
  }
}
