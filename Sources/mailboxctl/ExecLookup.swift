import Foundation
import Glibc

/// Finds the program of `--exec` or `--coprocess` as execvp(3) would, and says why when there
/// is none.
enum ExecLookup {
  /// The paths execvp(3) would try for `command`: the name itself when it holds a `/`, else
  /// that name in each directory of `$PATH` (an empty entry is the current directory).
  static func candidates(_ command: String) -> [String] {
    if command.contains("/") { return [command] }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    return path.split(separator: ":", omittingEmptySubsequences: false).map {
      ($0.isEmpty ? "." : String($0)) + "/" + command
    }
  }

  /// The first candidate that is a regular file (after symbolic links) we may execute; nil
  /// when none is.
  static func resolve(_ command: String) -> URL? {
    for candidate in candidates(command) {
      var info = stat()
      if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
        access(candidate, X_OK) == 0
      {
        return URL(fileURLWithPath: candidate)
      }
    }
    return nil
  }

  /// Why `option` cannot run `command` (exit 69, ``ExitStatus/unavailable``): a candidate
  /// that is a directory, one that is not executable (as execvp's EACCES), else "command not
  /// found" (ENOENT).
  static func failure(_ command: String, option: String) -> CommandFailure {
    for candidate in candidates(command) {
      var info = stat()
      guard stat(candidate, &info) == 0 else { continue }
      if info.st_mode & S_IFMT == S_IFDIR {
        // A name looked up in $PATH may be a directory there and a program further on.
        if command.contains("/") {
          return CommandFailure(.unavailable, "\(option): \(candidate) is a directory")
        }
        continue
      }
      return CommandFailure(
        .unavailable, "\(option): permission denied: \(candidate) is not executable")
    }
    return CommandFailure(.unavailable, "\(option): command not found: \(command)")
  }
}
