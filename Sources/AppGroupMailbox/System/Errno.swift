import Glibc

/// An error number a system call set (errno(3)), with Swift names for the values the spool
/// decides on, after swift-system's `Errno`. Each name gives the C constant it stands for.
///
/// Code compares against these names (`error.errno == .fileExists`), never against raw numbers;
/// ``rawValue`` is what the public ``AppGroupMailboxError/IOFailure/errno`` carries. Visible to
/// the package's other targets (`mailboxctl`), not part of the public API.
package struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The C value, for example 2 for `ENOENT`.
  package var rawValue: Int32

  package init(rawValue: Int32) { self.rawValue = rawValue }

  /// The calling thread's `errno` now: read it right after the failing call.
  package static var current: Errno { Errno(rawValue: Glibc.errno) }

  /// `ENOENT`: the entry is gone (another process moved or removed it first).
  package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
  /// `EEXIST`: the target name is taken.
  package static let fileExists = Errno(rawValue: EEXIST)
  /// `ELOOP`: a symlink where `O_NOFOLLOW` refuses one.
  package static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
  /// `ENOTDIR`: a path component, or an entry opened with `O_DIRECTORY`, is not a directory.
  package static let notDirectory = Errno(rawValue: ENOTDIR)
  /// `EISDIR`: a directory where a file was expected.
  package static let isDirectory = Errno(rawValue: EISDIR)
  /// `ENOTEMPTY`: the directory to remove still has entries.
  package static let directoryNotEmpty = Errno(rawValue: ENOTEMPTY)
  /// `EPERM`: the operation is not permitted (unlink(2) of a directory on Linux).
  package static let notPermitted = Errno(rawValue: EPERM)
  /// `EACCES`: the permission bits refuse the access.
  package static let permissionDenied = Errno(rawValue: EACCES)
  /// `EINVAL`: an argument or flag the call or the filesystem does not take.
  package static let invalidArgument = Errno(rawValue: EINVAL)
  /// `ENOSYS`: the kernel lacks the system call.
  package static let noFunction = Errno(rawValue: ENOSYS)
  /// `EWOULDBLOCK` (`EAGAIN` on Linux): the call would block (a FIFO, a held lock, a drained
  /// non-blocking descriptor).
  package static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
  /// `ENXIO`: a socket or a device without a driver behind it.
  package static let noSuchAddressOrDevice = Errno(rawValue: ENXIO)
  /// `ENODEV`: a device that cannot be opened this way.
  package static let operationNotSupportedByDevice = Errno(rawValue: ENODEV)
  /// `EXDEV`: the two paths are on different filesystems (rename(2) cannot cross them).
  package static let improperLink = Errno(rawValue: EXDEV)
  /// `EBUSY`: the entry is in use by the system, such as a mount point (rename(2), unlink(2)).
  package static let busy = Errno(rawValue: EBUSY)
  /// `EINTR`: a signal interrupted the call; ``Syscall`` retries it (never for close(2)).
  package static let interrupted = Errno(rawValue: EINTR)
  /// `EIO`: a low-level I/O error.
  package static let ioError = Errno(rawValue: EIO)
  /// `EBADF`: not an open descriptor, or not open for this access (a read-only spool).
  package static let badFileDescriptor = Errno(rawValue: EBADF)
  /// `ENOSPC`: no space left on the device (or, from inotify_add_watch(2), no watch left).
  package static let noSpace = Errno(rawValue: ENOSPC)
  /// `EPIPE`: the reading end of a pipe is closed.
  package static let brokenPipe = Errno(rawValue: EPIPE)
  /// `ETIMEDOUT`: a deadline passed.
  package static let timedOut = Errno(rawValue: ETIMEDOUT)
  /// `ENOMEM`: no memory for a buffer (malloc(3) returned nothing).
  package static let outOfMemory = Errno(rawValue: ENOMEM)

  /// strerror(3) of the value, for example "No such file or directory".
  package var description: String { String(cString: strerror(rawValue)) }

  /// What every message shows of an errno: `"No space left on device (errno 28)"`.
  package var explanation: String { "\(description) (errno \(rawValue))" }
}
