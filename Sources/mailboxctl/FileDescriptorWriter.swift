import AppGroupMailbox
import Foundation
import Glibc
import Synchronization

/// write(2) calls of ``FileDescriptorWriter`` under way now, in any thread.
private let writesUnderway = Atomic<Int>(0)
/// Set once a ``FileDescriptorWriter/interruptBlockedWrites(after:)`` reached its deadline.
private let deadlineReached = Atomic<Bool>(false)

/// Writes whole buffers to a descriptor with write(2), retrying after EINTR.
enum FileDescriptorWriter {
  /// An `until` for a writer a stop signal ends: true once one was received
  /// (``Signals/stopReceived``), also when the signal interrupted a write(2) blocked on a full
  /// pipe; the caller puts back what was not written whole.
  static let afterStopSignal: @Sendable (_ written: Int) -> Bool = { _ in Signals.stopReceived }

  /// Writes every byte of `data` to `fd`, from its own storage when it is contiguous (no copy);
  /// returns 0 on success, else the errno of the failed write(2) (EPIPE when the reader is
  /// gone). On a non-blocking descriptor (a parent may hand one over as stdout) it waits for
  /// room with poll(2) instead of failing with EAGAIN. `until`: given the bytes written so far,
  /// checked before each write(2), after one a signal interrupted, and after each wait for room
  /// (at least every 0.1 s while the descriptor has no room); once it returns true, it writes no
  /// more and returns EINTR. A write(2) blocked until a signal interrupted it (`EINTR`, nothing
  /// taken: a reader that stopped reading) is given up the same way after a stop signal
  /// (``Signals/stopReceived``) or once ``interruptBlockedWrites(after:)`` reached its deadline
  /// (``deadlinePassed``), whatever `until` says: nothing more will take it (a summary to a
  /// stalled stderr kept a stopped drain for ever).
  static func writeAll(
    _ fd: Int32, _ data: some DataProtocol, until: (_ written: Int) -> Bool = { _ in false }
  ) -> Int32 {
    if let code = data.withContiguousStorageIfAvailable({
      writeAll(fd, UnsafeRawBufferPointer($0), until: until)
    }) {
      return code
    }
    return Array(data).withUnsafeBytes { writeAll(fd, $0, until: until) }
  }

  private static func writeAll(
    _ fd: Int32, _ bytes: UnsafeRawBufferPointer, until: (_ written: Int) -> Bool
  ) -> Int32 {
    guard let base = bytes.baseAddress else { return 0 }
    var offset = 0
    while offset < bytes.count {
      if until(offset) { return EINTR }
      writesUnderway.add(1, ordering: .relaxed)
      let written = Glibc.write(fd, base + offset, bytes.count - offset)
      writesUnderway.subtract(1, ordering: .relaxed)
      if written < 0 {
        let code = Errno.current
        if code == .interrupted {
          if Signals.stopReceived || deadlinePassed { return EINTR }
          continue
        }
        if code == .wouldBlock {
          var waiter = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
          _ = poll(&waiter, 1, 100)
          continue
        }
        return code.rawValue
      }
      offset += written
    }
    return 0
  }

  /// Whether ``interruptBlockedWrites(after:)`` reached its deadline: writes blocked since are
  /// given up.
  static var deadlinePassed: Bool { deadlineReached.load(ordering: .acquiring) }

  /// Interrupts, from `deadline` on, a write of ``writeAll(_:_:until:)`` blocked on the command's
  /// thread (a stdout or stderr whose reader stopped reading), so `drain --timeout` and `watch
  /// --timeout` end: at the deadline it sets ``deadlinePassed``, then every 0.1 s while a write
  /// is under way it calls ``Signals/interruptCommandThread()``; the interrupted write gives up
  /// with `EINTR`. Repeated, since a write may begin just after a look. A thread of its own that
  /// lives as long as the process: the summary and error line written after the command's loop
  /// (to a stderr on the same stalled pipe) are covered too.
  static func interruptBlockedWrites(after deadline: Date) {
    let thread = Thread {
      let now = Date()
      if deadline > now { Thread.sleep(forTimeInterval: deadline.timeIntervalSince(now)) }
      deadlineReached.store(true, ordering: .releasing)
      while true {
        if writesUnderway.load(ordering: .relaxed) > 0 { Signals.interruptCommandThread() }
        Thread.sleep(forTimeInterval: 0.1)
      }
    }
    thread.start()
  }
}
