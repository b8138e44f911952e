import Foundation
import Glibc

/// Fresh directories for runs, all below one base directory that is removed at the end.
final class Workspace {
  let base: String
  private var counter = 0

  /// Creates the base directory (in `parent`, default /var/tmp).
  init(parent: String?) throws {
    let parentPath = parent ?? "/var/tmp"
    var template = Array("\(parentPath)/mailbox-bench-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw BenchError.setup("cannot create a directory in \(parentPath)")
    }
    base = String(cString: made)
  }

  /// A new, empty directory path (not yet created) named after `label`, handed out after
  /// ``settle()``, so every timed run starts on a settled filesystem.
  func fresh(_ label: String) -> String {
    settle()
    counter += 1
    return "\(base)/\(counter)-\(label)"
  }

  /// Writes back every filesystem's dirty data and metadata (sync(2)), untimed, so the
  /// cleanup of earlier runs does not land in the next timed one. On ext4 without a journal
  /// (this machine's root), creating a file skips every inode freed in the last
  /// `dirty_expire_centisecs` whose inode-table block is still dirty (fs/ext4/ialloc.c,
  /// `find_inode_bit` and `recently_deleted`): after a run's directory of thousands of files
  /// was removed, each creation scanned past them, and the C relaxed full cycle ran at 1,300
  /// instead of 25,000 messages a second in the next run. Written back, the blocks are clean
  /// and the skip does not apply.
  func settle() { sync() }

  /// Removes a run directory (never timed).
  func remove(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
  }

  /// Removes everything.
  func removeAll() {
    try? FileManager.default.removeItem(atPath: base)
  }
}

/// A benchmark that cannot run.
enum BenchError: Error, CustomStringConvertible {
  case setup(String)
  case failed(String)

  var description: String {
    switch self {
    case .setup(let text): "set-up failed: \(text)"
    case .failed(let text): "run failed: \(text)"
    }
  }
}

/// The monotonic clock the baseline uses, in nanoseconds.
func nowNanoseconds() -> Int64 {
  var spec = timespec()
  clock_gettime(CLOCK_MONOTONIC, &spec)
  return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}
