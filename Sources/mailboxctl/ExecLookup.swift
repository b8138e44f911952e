import Foundation
import Glibc

/// Why `--exec` cannot run `command`, as execvp(3) would report it: "permission denied" when a
/// file of that name exists but is not executable (EACCES), else "command not found" (ENOENT).
func execLookupFailure(_ command: String, option: String = "--exec") -> CommandFailure {
  var candidates: [String] = []
  if command.contains("/") {
    candidates = [command]
  } else {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    candidates = path.split(separator: ":", omittingEmptySubsequences: false).map {
      ($0.isEmpty ? "." : String($0)) + "/" + command
    }
  }
  for candidate in candidates {
    var info = stat()
    if stat(candidate, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
      return CommandFailure(
        .unavailable, "\(option): permission denied: \(candidate) is not executable")
    }
  }
  return CommandFailure(.unavailable, "\(option): command not found: \(command)")
}
