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

  /// What to add when posix_spawn(3) could not start `executable` with `error`: a file without
  /// a `#!` line is no program (ENOEXEC: posix_spawn does not fall back to /bin/sh, as execvp(3)
  /// would); EACCES on a file this user may not execute (its mode changed since the look at
  /// start) says so; a script whose `#!` line names an interpreter that is missing or cannot be
  /// run fails with the script's own path (ENOENT, EACCES; execve(2)), so that line is named.
  /// access(2) tells which, for the real user (drain's, which is also its handlers').
  static func startHint(_ executable: String, error: Int32) -> String {
    if error == ENOEXEC {
      return " (not a program: a script needs a first line '#!' naming its interpreter, such as "
        + "#!/bin/sh)"
    }
    if error == EACCES, access(executable, X_OK) != 0 {
      return " (this user may not execute it: its mode, or a directory on its path, refuses it)"
    }
    guard error == ENOENT || error == EACCES, let line = firstLine(executable),
      line.hasPrefix("#!")
    else { return "" }
    let interpreter = line.dropFirst(2).split(separator: " ", maxSplits: 1).first ?? ""
    guard access(String(interpreter), X_OK) != 0 else { return "" }
    return
      " (its '#!' line names the interpreter \(Output.shown(String(interpreter), limit: 100)), "
      + "which cannot be run)"
  }

  /// The first line of the file at `path` (at most 256 bytes read), nil when it cannot be read.
  private static func firstLine(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    let line = buffer[..<count].prefix { $0 != 0x0A }
    return String(decoding: line, as: UTF8.self)
  }
}
