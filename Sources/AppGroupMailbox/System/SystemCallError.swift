import Glibc

/// A failed system call: which call, and the errno it returned. Never carries file contents.
struct SystemCallError: Error, Equatable, Sendable {
  /// The system call's name, for example `"renameat2"`.
  var call: String
  /// The errno value the call failed with (see errno(3)).
  var errno: Int32

  /// True when the error means the entry is gone (`ENOENT`): it vanished between a listing and its
  /// use, or another process won the race for it.
  var isNotFound: Bool { errno == ENOENT }
}
