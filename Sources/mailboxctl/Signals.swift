import AppGroupMailbox
import Foundation
import Glibc
import Synchronization

/// The write end of the self-pipe the signal handler writes the signal number to.
nonisolated(unsafe) private var signalPipeWrite: Int32 = -1
/// The stop signals received so far, and the first of them (0: none): set by the signal
/// handler itself (lock-free atomics are async-signal-safe), so the thread a stop signal
/// interrupted in a blocked write(2) sees it as soon as the call returns.
private let stopsReceived = Atomic<Int>(0)
private let firstStop = Atomic<Int32>(0)
/// The thread that installed the handlers (the command's own), whose blocking calls a stop must
/// interrupt; set once, before any handler runs.
nonisolated(unsafe) private var commandThread = pthread_t()
/// Whether ``commandThread`` is set (``Signals/install()`` ran).
private let installed = Atomic<Bool>(false)

/// SIGINT, SIGTERM and SIGHUP as a stop request, and a wake-up that every wait in the command
/// uses. SIGHUP (a closed terminal or SSH session) is handled like SIGTERM.
///
/// The handler is a real sigaction(2) handler (not SIG_IGN), so programs started by `--exec`
/// get the default dispositions back on execve(2). It records the stop in atomics and
/// write(2)s the signal number to a pipe (both async-signal-safe); a thread reads the pipe and
/// wakes waiters. It is installed without `SA_RESTART`: a write(2) the signal interrupts (to a
/// stdout pipe whose reader stalls, a FIFO nobody reads) returns instead of blocking on, and the
/// writers that can stop (``FileDescriptorWriter/afterStopSignal``) give up.
///
/// The kernel delivers a signal sent to the process to any thread that does not block it
/// (signal(7)), often not the command's thread blocked in that write(2) or open(2). A handler
/// that runs on another thread therefore sends ``interruptSignal`` to the command's thread with
/// pthread_kill(3) (async-signal-safe, signal-safety(7)); its empty handler, also without
/// `SA_RESTART`, makes the blocked call return `EINTR` there.
final class Signals: Sendable {
  /// The signal that interrupts the command's thread on behalf of a stop signal another thread
  /// took: SIGURG, ignored by default and used for nothing else here.
  static let interruptSignal = SIGURG

  let wakeup = Wakeup()

  /// Whether a stop signal has been received (readable from any thread, at once).
  static var stopReceived: Bool { stopsReceived.load(ordering: .acquiring) > 0 }

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
    // Initialised here, not first in the handler (a global's first use runs its initialiser).
    _ = stopsReceived.load(ordering: .relaxed) + Int(firstStop.load(ordering: .relaxed))
    commandThread = pthread_self()
    installed.store(true, ordering: .releasing)
    var interrupt = sigaction()
    interrupt.__sigaction_handler.sa_handler = { _ in }
    sigemptyset(&interrupt.sa_mask)
    interrupt.sa_flags = 0
    sigaction(interruptSignal, &interrupt, nil)
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { number in
      _ = firstStop.compareExchange(expected: 0, desired: number, ordering: .relaxed)
      stopsReceived.add(1, ordering: .releasing)
      var byte = UInt8(truncatingIfNeeded: number)
      _ = Glibc.write(signalPipeWrite, &byte, 1)
      if pthread_equal(pthread_self(), commandThread) == 0 {
        _ = pthread_kill(commandThread, Signals.interruptSignal)
      }
    }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    for number in stopSignals { sigaction(number, &action, nil) }
    // A parent may have started us with these blocked (the mask is inherited): unblock them.
    var unblock = sigset_t()
    sigemptyset(&unblock)
    for number in stopSignals + [interruptSignal] { sigaddset(&unblock, number) }
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    let reader = fds[0]
    let thread = Thread {
      var byte: UInt8 = 0
      while true {
        let got = Glibc.read(reader, &byte, 1)
        if got < 0 && Errno.current == .interrupted { continue }
        guard got == 1 else { return }
        signals.wakeup.signal()
      }
    }
    thread.start()
    return signals
  }

  /// Sends ``interruptSignal`` to the command's thread, so a call blocked there (a write(2) to
  /// a stdout whose reader stalls) returns `EINTR`; nothing before ``install()``. From any
  /// thread.
  static func interruptCommandThread() {
    guard installed.load(ordering: .acquiring) else { return }
    _ = pthread_kill(commandThread, interruptSignal)
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
    let first = firstStop.load(ordering: .acquiring)
    return first == 0 ? nil : first
  }

  /// How many stop signals arrived (a second one asks to stop at once).
  var stopCount: Int { stopsReceived.load(ordering: .acquiring) }

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
