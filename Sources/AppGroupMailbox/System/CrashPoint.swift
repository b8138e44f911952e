import Glibc
import Synchronization

/// A test-only crash hook in the system-call layer: once armed, the process ends abruptly
/// (`_exit(2)` with ``exitStatus``, no clean-up, as a power cut or SIGKILL would leave it) right
/// after its k-th mutating system call, so a crash-torture test can stop an operation at every
/// step and check what the next process finds.
///
/// Mutating calls are those that change the file system: write, pwrite, fsync, ftruncate,
/// renameat, renameat2, linkat, unlinkat, mkdirat and fchmod. For test workers only; in release
/// builds arming does nothing.
@_spi(Testing) public enum CrashPoint {
  /// The exit status of a process this hook ended: 86.
  public static let exitStatus: Int32 = 86

  static let mutating: Set<String> = [
    "write", "pwrite", "fsync", "ftruncate", "renameat", "renameat2", "linkat", "unlinkat",
    "mkdirat", "fchmod",
  ]

  #if DEBUG
    /// Mutating calls still allowed; negative when disarmed.
    private static let remaining = Atomic<Int>(-1)

    /// Ends the process right after `mutations` more mutating system calls (0: before the next
    /// one).
    public static func arm(afterMutations mutations: Int) {
      remaining.store(mutations, ordering: .sequentiallyConsistent)
    }

    /// Disarms the hook.
    public static func disarm() { remaining.store(-1, ordering: .sequentiallyConsistent) }

    /// Makes every later renameat2(2) of this process fail with EINVAL, as on a filesystem
    /// without `RENAME_NOREPLACE`, so moves take the link-then-unlink fallback (or renameat(2)
    /// for fresh targets). For crash-torture workers.
    public static func forceRenameFallback() {
      FaultInjection.add(
        .init(call: "renameat2", errno: Errno.invalidArgument.rawValue, count: Int.max))
    }

    /// Called before every system call: ends the process when `call` would be one mutating call
    /// too many.
    static func check(_ call: String) {
      guard remaining.load(ordering: .relaxed) >= 0, mutating.contains(call) else { return }
      if remaining.subtract(1, ordering: .sequentiallyConsistent).newValue < 0 {
        _exit(exitStatus)
      }
    }
  #else
    /// Does nothing in release builds.
    public static func arm(afterMutations mutations: Int) {}
    /// Does nothing in release builds.
    public static func disarm() {}
    /// Does nothing in release builds.
    public static func forceRenameFallback() {}
    @inline(__always) static func check(_ call: String) {}
  #endif
}
