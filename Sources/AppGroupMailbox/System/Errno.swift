import Glibc

/// An error number a system call set (errno(3)), with Swift names for the values the spool
/// decides on, after swift-system's `Errno`. Each name gives the C constant it stands for.
///
/// Code compares against these names (`error.errno == .fileExists`), never against raw numbers;
/// ``rawValue`` is what the public ``AppGroupMailboxError/IOFailure/errno`` carries.
struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The C value, for example 2 for `ENOENT`.
  var rawValue: Int32

  init(rawValue: Int32) { self.rawValue = rawValue }

  /// The calling thread's `errno` now: read it right after the failing call.
  static var current: Errno { Errno(rawValue: Glibc.errno) }

  /// `ENOENT`: the entry is gone (another process moved or removed it first).
  static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
  /// `EEXIST`: the target name is taken.
  static let fileExists = Errno(rawValue: EEXIST)
  /// `ELOOP`: a symlink where `O_NOFOLLOW` refuses one.
  static let tooManySymbolicLinkLevels = Errno(rawValue: ELOOP)
  /// `ENOTDIR`: a path component, or an entry opened with `O_DIRECTORY`, is not a directory.
  static let notDirectory = Errno(rawValue: ENOTDIR)
  /// `EISDIR`: a directory where a file was expected.
  static let isDirectory = Errno(rawValue: EISDIR)
  /// `ENOTEMPTY`: the directory to remove still has entries.
  static let directoryNotEmpty = Errno(rawValue: ENOTEMPTY)
  /// `EPERM`: the operation is not permitted (unlink(2) of a directory on Linux).
  static let notPermitted = Errno(rawValue: EPERM)
  /// `EACCES`: the permission bits refuse the access.
  static let permissionDenied = Errno(rawValue: EACCES)
  /// `EINVAL`: an argument or flag the call or the filesystem does not take.
  static let invalidArgument = Errno(rawValue: EINVAL)
  /// `ENOSYS`: the kernel lacks the system call.
  static let noFunction = Errno(rawValue: ENOSYS)
  /// `EWOULDBLOCK` (`EAGAIN` on Linux): the call would block (a FIFO, a held lock, a drained
  /// non-blocking descriptor).
  static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
  /// `ENXIO`: a socket or a device without a driver behind it.
  static let noSuchAddressOrDevice = Errno(rawValue: ENXIO)
  /// `ENODEV`: a device that cannot be opened this way.
  static let operationNotSupportedByDevice = Errno(rawValue: ENODEV)
  /// `EXDEV`: the two paths are on different filesystems (rename(2) cannot cross them).
  static let improperLink = Errno(rawValue: EXDEV)
  /// `EINTR`: a signal interrupted the call; ``Syscall`` retries it (never for close(2)).
  static let interrupted = Errno(rawValue: EINTR)
  /// `EIO`: a low-level I/O error.
  static let ioError = Errno(rawValue: EIO)
  /// `EBADF`: not an open descriptor, or not open for this access (a read-only spool).
  static let badFileDescriptor = Errno(rawValue: EBADF)
  /// `ENOSPC`: no space left on the device (or, from inotify_add_watch(2), no watch left).
  static let noSpace = Errno(rawValue: ENOSPC)

  /// strerror(3) of the value, for example "No such file or directory".
  var description: String { String(cString: strerror(rawValue)) }
}
