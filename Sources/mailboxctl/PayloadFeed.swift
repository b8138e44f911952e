import Dispatch
import Foundation
import Glibc
import Synchronization

/// Writes a message to a handler's stdin on a thread of its own, so a handler that reads slowly
/// or not at all never blocks the drain.
///
/// The message is written whole to whoever reads the pipe: a process the handler left running
/// with its stdin gets the rest after the handler exited. The writing ends when every byte is
/// written, when nobody holds the read end any more (EPIPE), when ``stallLimit`` seconds pass
/// after the handler's exit without a byte read, or at once after ``abandon()``. The thread is
/// joinable: ``join()`` returns once it has ended and dropped its copy of the message, so none
/// outlives the drain. The thread is started before the handler, so a handler never starts
/// without its input.
final class PayloadFeed: Sendable {
  /// Seconds without a byte read, counted from the handler's exit, after which the rest of the
  /// message is given up.
  static let stallLimit: TimeInterval = 10

  private let fd: Int32
  private let payload: Data
  private let abandoned = Atomic<Bool>(false)
  private let ended = Atomic<Bool>(false)
  /// `DispatchTime` uptime nanoseconds of the handler's exit; 0 while it runs.
  private let handlerExitedAt = Atomic<UInt64>(0)
  private let thread = Mutex<pthread_t?>(nil)

  /// Starts writing `payload` to `fd` (the write end of the handler's stdin pipe, which it
  /// closes when done). The descriptor is made non-blocking, so the thread looks at its end
  /// conditions at least every 0.1 s.
  /// - Throws: ``CommandFailure`` (``ExitStatus/osError``) when no thread can be started
  ///   (``PosixThread``); `fd` is left open to the caller then, and nothing was written.
  init(fd: Int32, payload: Data) throws(CommandFailure) {
    self.fd = fd
    self.payload = payload
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    let handle = try PosixThread.start(joinable: true, to: "write a handler's input") {
      [self] in write()
    }
    thread.withLock { $0 = handle }
  }

  private func write() {
    var written = -1
    var progressAt = DispatchTime.now().uptimeNanoseconds
    // A handler that does not read its input gets EPIPE here, which is not an error.
    _ = FileDescriptorWriter.writeAll(fd, payload) { offset in
      if abandoned.load(ordering: .acquiring) { return true }
      let now = DispatchTime.now().uptimeNanoseconds
      if offset != written {
        written = offset
        progressAt = now
        return false
      }
      let exitedAt = handlerExitedAt.load(ordering: .acquiring)
      guard exitedAt > 0 else { return false }
      let idle = now - max(progressAt, exitedAt)
      return Double(idle) / 1e9 >= Self.stallLimit
    }
    close(fd)
    ended.store(true, ordering: .releasing)
  }

  /// Notes that the handler has exited: from now on, ``stallLimit`` seconds without a byte read
  /// end the writing.
  func handlerExited() {
    _ = handlerExitedAt.compareExchange(
      expected: 0, desired: max(1, DispatchTime.now().uptimeNanoseconds), ordering: .releasing)
  }

  /// Whether the writing has ended (then ``join()`` returns at once).
  var hasEnded: Bool { ended.load(ordering: .acquiring) }

  /// Gives up what is left to write: the thread ends within about 0.1 s.
  func abandon() { abandoned.store(true, ordering: .releasing) }

  /// Waits until the thread has ended (pthread_join(3)); at once when it has. Call
  /// ``abandon()`` first not to wait for a reader.
  func join() {
    guard
      let handle = thread.withLock({ value in
        defer { value = nil }; return value
      })
    else {
      return
    }
    pthread_join(handle, nil)
  }
}
