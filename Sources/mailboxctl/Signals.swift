import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// The write end of the self-pipe the signal handler writes the signal number to.
nonisolated(unsafe) private var signalPipeWrite: Int32 = -1

/// SIGINT, SIGTERM and SIGHUP as a stop request, and a wake-up that every wait in the command
/// uses. SIGHUP (a closed terminal or SSH session) is handled like SIGTERM.
///
/// The handler is a real sigaction(2) handler (not SIG_IGN), so programs started by `--exec`
/// get the default dispositions back on execve(2). It only write(2)s the signal number to a
/// pipe (async-signal-safe); a thread reads it, records the stop and wakes waiters.
final class Signals: Sendable {
  /// The first stop signal received (SIGINT, SIGTERM or SIGHUP), or 0; and how many were received.
  private let state = Locked<(first: Int32, count: Int)>((0, 0))
  let wakeup = Wakeup()

  /// The signals that ask a command to stop.
  static let stopSignals = [SIGINT, SIGTERM, SIGHUP]

  /// Installs handlers for ``stopSignals``; call once.
  static func install() -> Signals {
    let signals = Signals()
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return signals }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
    signalPipeWrite = fds[1]
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { number in
      var byte = UInt8(truncatingIfNeeded: number)
      _ = Glibc.write(signalPipeWrite, &byte, 1)
    }
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    for number in stopSignals { sigaction(number, &action, nil) }
    // A parent may have started us with these blocked (the mask is inherited): unblock them.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    for number in stopSignals { sigaddset(&unblock, number) }
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    let reader = fds[0]
    let thread = Thread {
      var byte: UInt8 = 0
      while true {
        let got = Glibc.read(reader, &byte, 1)
        if got < 0 && Errno.current == .interrupted { continue }
        guard got == 1 else { return }
        signals.state.withLock { state in
          if state.first == 0 { state.first = Int32(byte) }
          state.count += 1
        }
        signals.wakeup.signal()
      }
    }
    thread.start()
    return signals
  }

  /// Makes a write to a closed pipe fail with EPIPE instead of killing the process, with a
  /// handler rather than SIG_IGN so child processes get the default back on execve(2).
  static func ignoreBrokenPipe() {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in }
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    sigaction(SIGPIPE, &action, nil)
  }

  /// The first stop signal received, or nil.
  var stopSignal: Int32? {
    let first = state.withLock { $0.first }
    return first == 0 ? nil : first
  }

  /// How many stop signals arrived (a second one asks to stop at once).
  var stopCount: Int { state.withLock { $0.count } }

  /// The first stop signal's name (`SIGINT`, `SIGTERM`, `SIGHUP`), or nil.
  var stopSignalName: String? {
    switch stopSignal {
    case SIGINT?: "SIGINT"
    case SIGTERM?: "SIGTERM"
    case SIGHUP?: "SIGHUP"
    case let other?: "signal \(other)"
    case nil: nil
    }
  }

  /// The exit status for a command stopped by a signal: 0 after SIGTERM or SIGHUP (so a systemd
  /// service is not marked failed), 130 after SIGINT.
  var stoppedStatus: ExitStatus { stopSignal == SIGINT ? .interrupted : .success }
}

/// A wake-up any thread can post and one waiter consumes; posts are counted, so a waiter may
/// wake spuriously and must re-check its conditions.
final class Wakeup: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)

  func signal() { semaphore.signal() }

  /// Waits up to `seconds`; returns true when woken, false on timeout.
  @discardableResult
  func wait(seconds: Double) -> Bool {
    semaphore.wait(timeout: .now() + .microseconds(Int(max(0, min(seconds, 3600)) * 1_000_000)))
      == .success
  }

  /// Waits up to `seconds`, then takes every post already waiting too, so a burst of posts
  /// (one per handler exit or wake-up) costs the waiter one round of re-checks.
  func waitCoalescing(seconds: Double) {
    guard wait(seconds: seconds) else { return }
    while semaphore.wait(timeout: .now()) == .success {}
  }
}
