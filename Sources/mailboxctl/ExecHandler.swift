import AppGroupMailbox
import Foundation
import Glibc

/// One `--exec` handler process and the claim it works on.
///
/// The program gets the message JSON and a newline on stdin, then end of file (written by a
/// ``PayloadFeed``, which goes on after the program exited for a process it left reading its
/// stdin), and these environment
/// variables: `MAILBOX_ID` (UUID, lower case), `MAILBOX_ENQUEUED_AT` (ISO 8601, UTC, to the
/// microsecond), `MAILBOX_DELIVERY_COUNT` (1 on the first delivery), `MAILBOX_MESSAGE_TYPE`
/// (empty when untyped), `MAILBOX_PAYLOAD_VERSION` (1 unless the producer recorded another),
/// `MAILBOX_PRIORITY` (the level, 0 to 9), `MAILBOX_NAMESPACE` and `MAILBOX_CONTAINER`. Its stdout and stderr are
/// mailboxctl's own. It runs in its own process group (see ``ChildProcess``); an exit 0 counts
/// as soon as it exits, whatever it left running; any other end once nothing it left in its
/// group may still run (``ExecDelivery/poll()``).
final class HandlerRun {
  let claim: AppGroupRawMailbox.Claim
  let process: ChildProcess
  let startedAt = Date()
  /// The coordinator thread's bookkeeping (only it touches these).
  var lastRenewal = Date()
  var timedOut = false

  /// Whether the process has exited.
  var hasExited: Bool { process.hasExited }

  /// True when the handler exited with status 0 (only meaningful once exited).
  var succeeded: Bool { process.succeeded }

  /// A short description of how it ended, for diagnostics.
  var outcome: String { timedOut ? "timed out" : process.outcome }

  /// Starts `executable` for `claim`; `wakeup` is posted when the process exits.
  /// - Throws: ``CommandFailure`` when the program cannot be started.
  init(
    executable: URL, arguments: [String], claim: AppGroupRawMailbox.Claim,
    location: MailboxOptions.Location, wakeup: Wakeup
  ) throws(CommandFailure) {
    self.claim = claim
    var environment = ProcessInfo.processInfo.environment
    environment["MAILBOX_ID"] = claim.id.uuidString.lowercased()
    environment["MAILBOX_ENQUEUED_AT"] = ISO8601.format(claim.enqueuedAt)
    environment["MAILBOX_DELIVERY_COUNT"] = String(claim.deliveryCount)
    environment["MAILBOX_MESSAGE_TYPE"] = claim.messageType
    environment["MAILBOX_PAYLOAD_VERSION"] = String(claim.payloadVersion)
    environment["MAILBOX_PRIORITY"] = String(claim.priority)
    environment["MAILBOX_NAMESPACE"] = location.namespace
    environment["MAILBOX_CONTAINER"] = location.container.path
    let input = try ChildProcess.pipe()
    var message = claim.payload
    message.append(0x0A)  // a line: `read` in a shell handler needs its end
    // The writer first: a handler whose input could not be written must never start (it would
    // read end of file, exit 0 and have an unread message acknowledged).
    do {
      feed = try PayloadFeed(fd: input.write, payload: message)
    } catch {
      close(input.read)
      close(input.write)
      throw error
    }
    do {
      process = try ChildProcess(
        executable: executable.path, arguments: arguments, environment: environment,
        stdin: input.read, stdout: nil, exited: { wakeup.signal() })
    } catch {
      close(input.read)  // the writer gets EPIPE
      feed.abandon()
      feed.join()
      throw error
    }
    close(input.read)
  }

  /// The thread that writes the message to the handler's stdin; it may go on after the
  /// handler exited (see ``PayloadFeed``).
  let feed: PayloadFeed

  /// Stops the handler's process group (see ``ChildProcess/stop(grace:now:)``).
  func stop(grace: TimeInterval, now: Date = Date()) {
    process.stop(grace: grace, now: now)
  }

  /// Whether it was stopped by drain (a timeout or a stop request).
  var stopRequested: Bool { process.stopRequested }

  /// What its exit means for its message.
  enum Verdict {
    /// Exited 0, neither timed out nor stopped: acknowledged.
    case finished
    /// Stopped by a stop signal (not a timeout): released without counting a failure.
    case interrupted
    /// Failed or timed out: released with the retry policy.
    case failed
  }

  /// Its verdict, once the coordinator judged its exit (``judge()``).
  var verdict: Verdict?

  /// The verdict of its exit: call once it has exited, before drain stops what it left.
  func judge() -> Verdict {
    if stopRequested && !timedOut { return .interrupted }
    return succeeded && !timedOut ? .finished : .failed
  }
}
