/// A failed system call: which call, the errno it returned, and the role of the path it was made
/// on (after swift-nio's `FileSystemError`). Never carries a path or file contents; the caller
/// adds the operation when it maps the error to ``AppGroupMailboxError/ioFailure(_:)``.
struct SystemCallError: Error, Equatable, Sendable {
  /// The system call's name, for example `"renameat2"`.
  var call: String
  /// The errno the call failed with (see errno(3)).
  var errno: Errno
  /// What the descriptor the call was made on is to the mailbox (the directory for the
  /// `…at` calls), when a ``FileDescriptor`` owns it; nil for a borrowed descriptor.
  var role: PathRole?
  /// For a call with two paths (`renameat2`, `linkat`), the role of the target's directory.
  var targetRole: PathRole?

  init(call: String, errno: Errno, role: PathRole? = nil, targetRole: PathRole? = nil) {
    self.call = call
    self.errno = errno
    self.role = role
    self.targetRole = targetRole
  }

  /// The roles as the public cause names them: `"tmp area"`, `"tmp area and the pending area"`
  /// for a call between two directories, or empty when unknown.
  var roleDescription: String {
    switch (role, targetRole) {
    case (let from?, let to?) where from != to: "\(from.rawValue) and the \(to.rawValue)"
    case (let one?, _), (nil, let one?): one.rawValue
    case (nil, nil): ""
    }
  }

  /// The failure of `call` on descriptor `fd` with the thread's errno now (read it right after
  /// the call), naming `fd`'s role.
  static func current(_ call: String, at fd: Int32 = -1) -> SystemCallError {
    let code = Errno.current
    return SystemCallError(call: call, errno: code, role: FileDescriptor.role(of: fd))
  }

  /// True when the error means the entry is gone (`ENOENT`): it vanished between a listing and its
  /// use, or another process won the race for it.
  var isNotFound: Bool { errno == .noSuchFileOrDirectory }
}
