import AppGroupMailbox
import Glibc

/// Descriptors 0, 1 and 2 as the command finds them.
enum StandardStreams {
  /// Puts a placeholder on each of stdin, stdout and stderr that was closed at start (`<&-`,
  /// `>&-`), so no file the command opens (a mailbox's state file, a message) can take that
  /// number and receive output meant for the closed stream. The placeholder is /dev/null opened
  /// the other way round (write-only for stdin, read-only for stdout and stderr), so reading or
  /// writing the stream still fails with EBADF, exactly as on the closed descriptor, and the
  /// command reports it. Call first thing, before anything is opened.
  static func reserveClosed() {
    for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && Errno.current == .badFileDescriptor {
      let placeholder = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY)
      if placeholder >= 0, placeholder != fd {
        dup2(placeholder, fd)
        close(placeholder)
      }
    }
  }
}
