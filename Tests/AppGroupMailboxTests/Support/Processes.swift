import Foundation
import Glibc

/// Runs and waits on real processes built by this package.
enum Processes {
  /// The directory holding the package's built executables (beside the test bundle).
  static var productsDirectory: URL {
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.path != "/"
      && !FileManager.default.fileExists(
        atPath: url.appendingPathComponent("MailboxTestWorker").path)
    {
      url.deleteLastPathComponent()
    }
    return url
  }

  /// The built executable `name` (for example `MailboxTestWorker` or `mailboxctl`).
  static func product(_ name: String) -> URL { productsDirectory.appendingPathComponent(name) }

  /// Starts `executable` with `arguments`; stdout and stderr go to pipes when `capture`.
  static func start(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:],
    stdin: Data? = nil
  ) throws -> RunningProcess {
    let (process, out, err) = prepare(executable, arguments, environment: environment)
    let input = Pipe()
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try? input.fileHandleForWriting.close()
    return RunningProcess(process: process, stdout: out, stderr: err)
  }

  /// A process for `executable` with `arguments`, this process's environment overlaid with
  /// `environment`, and stdout and stderr going to the pipes returned; not started yet.
  static func prepare(
    _ executable: URL, _ arguments: [String], environment: [String: String]
  ) -> (process: Process, stdout: Pipe, stderr: Pipe) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    return (process, out, err)
  }

  /// Runs the worker to completion within `deadline` seconds (a hang fails the test).
  static func runWorker(_ arguments: [String], deadline: TimeInterval = 120) throws -> Finished {
    try start(product("MailboxTestWorker"), arguments).finish(deadline: deadline)
  }
}

/// A started process whose output is collected as it runs, so a full pipe never blocks it.
final class RunningProcess: @unchecked Sendable {
  let process: Process
  private let lock = NSLock()
  private var out = Data()
  private var err = Data()
  private let group = DispatchGroup()

  init(process: Process, stdout: Pipe, stderr: Pipe) {
    self.process = process
    for (pipe, isOut) in [(stdout, true), (stderr, false)] {
      group.enter()
      DispatchQueue.global().async { [self] in
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        lock.lock()
        if isOut { out = data } else { err = data }
        lock.unlock()
        group.leave()
      }
    }
  }

  var pid: Int32 { process.processIdentifier }

  /// Sends `signal` (for example SIGKILL or SIGSTOP).
  func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

  /// Waits for exit within `deadline` seconds; on timeout kills the process and throws.
  func finish(deadline: TimeInterval = 120) throws -> Finished {
    let limit = Date().addingTimeInterval(deadline)
    while process.isRunning {
      if Date() > limit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw ProcessTimeout(arguments: process.arguments ?? [])
      }
      usleep(2_000)
    }
    process.waitUntilExit()
    group.wait()
    lock.lock()
    defer { lock.unlock() }
    return Finished(
      status: process.terminationStatus, reason: process.terminationReason,
      stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
  }
}

/// A process's end: status, how it ended, and its output.
struct Finished: Sendable {
  var status: Int32
  var reason: Process.TerminationReason
  var stdout: String
  var stderr: String
  var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

struct ProcessTimeout: Error, CustomStringConvertible {
  var arguments: [String]
  var description: String { "process did not finish in time: \(arguments)" }
}

/// Polls `condition` until it holds or `deadline` seconds pass; returns whether it held. The
/// deadline is a correctness bound (a hang or a missed wake-up), never a timing assertion.
func waitUntil(deadline: TimeInterval = 30, _ condition: () throws -> Bool) rethrows -> Bool {
  let limit = Date().addingTimeInterval(deadline)
  while Date() < limit {
    if try condition() { return true }
    usleep(1_000)
  }
  return try condition()
}

/// Runs blocking `body` on a thread of its own and returns its result, so a long synchronous
/// test does not hold one of the few cooperative threads (two on a 2-core machine) that async
/// tests running in parallel need. Record expectations on the returned value, not in `body`.
func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws
  -> T
{
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.stackSize = 8 << 20
    thread.start()
  }
}
