import Dispatch
import Glibc
import MailboxLocks

/// libdispatch's event loop, started while the process still has descriptors to spare.
///
/// libdispatch opens its epoll and eventfd descriptors when the process's first dispatch source
/// is resumed (on the resuming thread), and stops the process (SIGILL, `_dispatch_epoll_init`)
/// when it cannot; it has no error to return. A watcher that falls back to polling near
/// `RLIMIT_NOFILE` resumed a timer source at that moment, so a process that had opened
/// mailboxes up to its descriptor limit died instead of polling. Every mailbox starts the loop
/// here, before it opens descriptors of its own.
enum DispatchEventLoop {
  /// Descriptors the loop needs (epoll, eventfd, a timerfd) and one to spare.
  static let descriptorsNeeded = 4

  /// Starts the loop once per process: a source resumed and cancelled at once (nothing waits
  /// for a worker thread), and a timer armed an hour ahead and cancelled, so its timerfd is
  /// made while descriptors are free too. Thread-safe; O(1).
  /// - Throws: ``SystemCallError`` `EMFILE` (call `open`, of `/dev/null`) while fewer than
  ///   ``descriptorsNeeded`` descriptors are free: the caller reports the error instead of the
  ///   process stopping, and the next open tries again.
  static func start() throws {
    if started.withLock({ $0 }) { return }
    var spare: [Int32] = []
    defer { spare.forEach { _ = close($0) } }
    for _ in 0..<descriptorsNeeded {
      let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { throw SystemCallError.current("open") }
      spare.append(fd)
    }
    for fd in spare { _ = close(fd) }
    spare = []
    started.withLock { started in
      guard !started else { return }
      let source = DispatchSource.makeUserDataAddSource(queue: DispatchQueue.global())
      source.resume()
      source.cancel()
      let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
      timer.schedule(deadline: .now() + 3600)
      timer.resume()
      timer.cancel()
      started = true
    }
  }

  private static let started = Locked<Bool>(false)
}
