import AppGroupMailbox
import Foundation
import Glibc

/// Writes whole buffers to a descriptor with write(2), retrying after EINTR.
enum FileDescriptorWriter {
  /// Writes every byte of `data` to `fd`; returns 0 on success, else the errno of the failed
  /// write(2) (EPIPE when the reader is gone). On a non-blocking descriptor (a parent may hand
  /// one over as stdout) it waits for room with poll(2) instead of failing with EAGAIN.
  /// `stoppable`: once a stop signal was received (``Signals/stopReceived``), it writes no more
  /// and returns EINTR, also when the signal interrupted a write(2) blocked on a full pipe: the
  /// caller puts back what was not written whole. `until`: given the bytes written so far,
  /// checked before each write(2) and after each wait for room (at least every 0.1 s while the
  /// descriptor has no room); once it returns true, it writes no more and returns EINTR.
  static func writeAll(
    _ fd: Int32, _ data: some DataProtocol, stoppable: Bool = false,
    until: (_ written: Int) -> Bool = { _ in false }
  ) -> Int32 {
    let bytes = Array(data)
    var offset = 0
    while offset < bytes.count {
      if stoppable && Signals.stopReceived || until(offset) { return EINTR }
      let written = bytes.withUnsafeBytes { raw in
        Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
      }
      if written < 0 {
        let code = Errno.current
        if code == .interrupted { continue }
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
}
