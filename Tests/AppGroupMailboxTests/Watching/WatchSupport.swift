import Foundation
import Glibc
import Testing

/// Helpers for the wake-up tests: a worker's line log, wall-clock micros, the wake-up deadline.
enum WatchSupport {
  /// The correctness deadline for a wake-up, in microseconds: 500 ms, or
  /// `AGM_WAKE_DEADLINE_MS` when set (widen it under sanitizers or valgrind). Not a speed
  /// target: the benchmark measures latency.
  static var wakeDeadlineMicros: Int64 {
    let milliseconds = ProcessInfo.processInfo.environment["AGM_WAKE_DEADLINE_MS"].flatMap {
      Int64($0)
    }
    return (milliseconds ?? 500) * 1_000
  }

  static func nowMicros() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
  }

  /// Whether every thread of process `pid` is stopped (state `T` in /proc/PID/task/*/stat,
  /// proc(5)). kill(2) returns before SIGSTOP takes effect, so tests wait for this.
  static func isStopped(pid: Int32) -> Bool {
    let directory = "/proc/\(pid)/task"
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: directory),
      !tasks.isEmpty
    else { return false }
    return tasks.allSatisfy { task in
      guard let stat = try? String(contentsOfFile: "\(directory)/\(task)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
      else { return false }
      let state = stat[stat.index(after: close)...].split(separator: " ").first
      return state == "T" || state == "t"
    }
  }

  /// Starts `mailboxctl drain --follow` on `container` (with `arguments`) and returns once it
  /// watches its three directories (the namespace, `pending/` and `delayed/`), so a change made
  /// next is one it sees happen.
  static func startFollowingDrain(
    _ container: TemporaryContainer, _ arguments: [String] = []
  ) throws -> StreamingProcess {
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow"] + arguments)
    #expect(
      waitUntil(deadline: 30) { inotifyWatchCount(pid: drain.process.processIdentifier) >= 3 })
    return drain
  }

  /// How many inotify watches process `pid` holds (the `inotify wd:` lines of its descriptors'
  /// fdinfo, proc(5)): a worker is armed once this reaches its watch count.
  static func inotifyWatchCount(pid: Int32) -> Int {
    let directory = "/proc/\(pid)/fdinfo"
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
      return 0
    }
    var count = 0
    for name in names {
      guard let text = try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)
      else { continue }
      count += text.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }
    return count
  }
}

/// The log file a worker appends to (see Sources/MailboxTestWorker/WatchCommands.swift).
struct WorkerLog {
  let path: String

  init(in container: TemporaryContainer, _ name: String = "worker.log") {
    path = container.url.appendingPathComponent(name).path
  }

  var lines: [String] {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(
      String.init)
  }

  /// The lines with the micros of `claimed` lines removed (`claimed 7`).
  var events: [String] {
    lines.map { line in
      line.hasPrefix("claimed ")
        ? line.split(separator: " ").prefix(2).joined(separator: " ") : line
    }
  }

  /// The wall-clock micros at which `value` was claimed, if it was.
  func claimedMicros(_ value: Int) -> Int64? {
    for line in lines {
      let parts = line.split(separator: " ")
      if parts.count == 3, parts[0] == "claimed", parts[1] == Substring(String(value)) {
        return Int64(parts[2])
      }
    }
    return nil
  }

  /// Waits (correctness bound, 30 s) until `value` is claimed and returns when.
  func waitForClaim(_ value: Int, deadline: TimeInterval = 30) -> Int64? {
    _ = waitUntil(deadline: deadline) { claimedMicros(value) != nil }
    return claimedMicros(value)
  }
}
