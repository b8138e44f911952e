import Dispatch

/// libdispatch's event loop, started while the process still has descriptors to spare.
///
/// libdispatch opens its epoll and eventfd descriptors when the process's first dispatch source
/// is resumed, and stops the process (SIGILL, `_dispatch_epoll_init`) when it cannot; it has no
/// error to return. A watcher that falls back to polling near `RLIMIT_NOFILE` resumes a timer
/// source at that moment, so a process that had opened mailboxes up to its descriptor limit
/// died instead of polling. Every mailbox starts the loop here before it opens its own
/// descriptors: from then on the loop's descriptors exist, and a full descriptor table fails
/// the mailbox's own open(2) calls with `EMFILE`, an error the caller sees.
enum DispatchEventLoop {
  /// Starts the loop once per process and returns when it runs: a timer source fires once on
  /// it (its descriptors are made on a worker thread, so resuming alone would race with the
  /// caller's next open(2)). Waits at most 10 seconds. Thread-safe (a `static let` initialiser
  /// runs once).
  static func start() { _ = started }

  private static let started: Bool = {
    let fired = DispatchSemaphore(value: 0)
    let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
    source.schedule(deadline: .now())
    source.setEventHandler { fired.signal() }
    source.resume()
    _ = fired.wait(timeout: .now() + 10)
    source.cancel()
    return true
  }()
}
