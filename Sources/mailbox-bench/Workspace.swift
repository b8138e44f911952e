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

  /// A new, empty directory path (not yet created) named after `label`.
  func fresh(_ label: String) -> String {
    counter += 1
    return "\(base)/\(counter)-\(label)"
  }

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
