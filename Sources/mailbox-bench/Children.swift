import Foundation
import Glibc

/// Child processes of the benchmark: this same executable started with a worker role (see
/// Workers.swift), so library and baseline children start the same way.
enum Children {
  /// This executable's path (readlink of /proc/self/exe).
  static let executable: String = {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let length = buffer.withUnsafeMutableBufferPointer { raw in
      raw.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, 4095) }
    }
    return length > 0
      ? String(decoding: buffer[..<length], as: UTF8.self) : CommandLine.arguments[0]
  }()

  /// Starts `executable` (default: this one) with `arguments`; stdout and stderr are inherited,
  /// or written to the files `stdout` / `stderr` (created or truncated) when given.
  static func spawn(
    _ arguments: [String], executable: String = Children.executable, stdout: String? = nil,
    stderr: String? = nil
  ) throws -> pid_t {
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (descriptor, path) in [(Int32(1), stdout), (Int32(2), stderr)] {
      guard let path else { continue }
      posix_spawn_file_actions_addopen(
        &actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard result == 0 else {
      throw BenchError.setup("cannot start \(executable): errno \(result)")
    }
    return pid
  }

  /// Waits for `pid`; returns its exit status and peak resident memory in bytes (wait4(2),
  /// `ru_maxrss`).
  static func wait(_ pid: pid_t) throws -> (status: Int32, peakResidentBytes: Int) {
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
      guard errno == EINTR else { throw BenchError.failed("wait4: errno \(errno)") }
    }
    let exited = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (exited, Int(usage.ru_maxrss) * 1024)
  }

  /// Runs `arguments` to completion; throws unless it exits 0.
  @discardableResult
  static func run(_ arguments: [String], executable: String = Children.executable) throws
    -> Int
  {
    let (status, peak) = try wait(try spawn(arguments, executable: executable))
    guard status == 0 else {
      throw BenchError.failed("\(arguments.first ?? executable) exited with \(status)")
    }
    return peak
  }

  /// Sleeps until the monotonic clock reads `goNanoseconds`; returns whether it was already
  /// past (the child started late).
  static func sleep(until goNanoseconds: Int64) -> Bool {
    let late = nowNanoseconds() > goNanoseconds
    var target = timespec(
      tv_sec: Int(goNanoseconds / 1_000_000_000), tv_nsec: Int(goNanoseconds % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    return late
  }

  /// This process's peak resident memory in bytes (`VmHWM` in /proc/self/status, proc(5)).
  /// Unlike wait4's `ru_maxrss`, it starts afresh at exec, so the parent's size before
  /// posix_spawn does not leak into a child's figure.
  static func peakResidentBytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
      let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return -1 }
    return kilobytes * 1024
  }

  /// Writes a child's result line to `path`.
  static func report(_ path: String, _ values: [String]) throws {
    try (values.joined(separator: " ") + "\n").write(
      toFile: path, atomically: false, encoding: .utf8)
  }

  /// Reads a child's result line as words.
  static func result(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(whereSeparator: \.isWhitespace).map(
      String.init)
  }
}
