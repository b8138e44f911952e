#if DEBUG
  import MailboxLocks
#endif

/// A test-only hook in the system-call layer: records the calls that change the file system (and
/// every openat(2)) made by the current task or thread, and can run an action just before each,
/// so tests check the order of writes, flushes and renames (what `strace` would show) or make an
/// entry vanish between a listing and its use. A crash-torture test kills its process from
/// ``Recorder/before``.
///
/// Only compiled into debug builds (what `swift test` builds); release builds record nothing.
/// Scoped with a task-local value, so tests running in parallel never see each other's calls.
enum SystemCallRecording {
  /// One system call as the wrapper in ``Syscall`` made it.
  struct Call: Sendable, Equatable, CustomStringConvertible {
    /// The system call: `openat`, `write`, `pwrite`, `fsync`, `ftruncate`, `renameat`,
    /// `renameat2`, `linkat`, `unlinkat`, `mkdirat` or `flock` (whose `flags` is the operation).
    var name: String
    /// The descriptor acted on: the directory for calls that take a path, the file otherwise.
    var descriptor: Int32
    /// The path argument, relative to ``descriptor``; nil for calls without one.
    var path: String?
    /// The destination directory of `renameat`, `renameat2` and `linkat`.
    var targetDescriptor: Int32?
    /// The destination name of `renameat`, `renameat2` and `linkat`.
    var targetPath: String?
    /// `openat`'s flags (`O_CREAT`, ...), `unlinkat`'s (`AT_REMOVEDIR`), else 0.
    var flags: Int32 = 0
    /// The result: the new descriptor for `openat`, bytes for writes, 0, or `-errno` on failure.
    /// Nil in the value given to ``Recorder/before``.
    var result: Int?

    var description: String {
      var text = "\(name)(\(descriptor)"
      if let path { text += ", \(path)" }
      if let targetDescriptor { text += " -> \(targetDescriptor)" }
      if let targetPath { text += ", \(targetPath)" }
      return text + ") = \(result.map(String.init) ?? "?")"
    }
  }

  #if DEBUG
    /// Collects calls in order; `before` runs just before each call is made (outside every
    /// recorder lock, on the calling thread; system calls it makes are not recorded).
    final class Recorder: Sendable {
      private let calls = Locked<[Call]>([])
      let before: (@Sendable (Call) -> Void)?

      init(before: (@Sendable (Call) -> Void)? = nil) { self.before = before }

      /// Every call recorded so far, oldest first.
      var all: [Call] { calls.withLock { $0 } }

      func append(_ call: Call) { calls.withLock { $0.append(call) } }
    }

    /// The recorder of the current task or thread, if any.
    @TaskLocal static var current: Recorder?

    /// Runs `body` with `recorder` recording its system calls.
    static func recording<T>(_ recorder: Recorder, _ body: () throws -> T) rethrows -> T {
      try $current.withValue(recorder, operation: body)
    }

    /// Makes `call` through `body`, recording it when a recorder is active.
    @inline(__always)
    static func observe<R: BinaryInteger>(_ call: @autoclosure () -> Call, _ body: () throws -> R)
      rethrows -> R
    {
      guard let recorder = current else { return try body() }
      var made = call()
      if let before = recorder.before { $current.withValue(nil) { before(made) } }
      do {
        let result = try body()
        made.result = Int(result)
        recorder.append(made)
        return result
      } catch let error as SystemCallError {
        made.result = -Int(error.errno.rawValue)
        recorder.append(made)
        throw error
      }
    }
  #else
    @inline(__always)
    static func observe<R: BinaryInteger>(_ call: @autoclosure () -> Call, _ body: () throws -> R)
      rethrows -> R
    {
      try body()
    }
  #endif
}
