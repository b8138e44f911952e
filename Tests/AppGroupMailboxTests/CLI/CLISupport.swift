import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// Runs the built `mailboxctl`.
enum Mailboxctl {
  static var url: URL { Processes.product("mailboxctl") }

  /// Runs `mailboxctl arguments` to completion with `stdin` (empty when nil).
  static func run(
    _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
    deadline: TimeInterval = 120
  ) throws -> Finished {
    try Processes.start(url, arguments, environment: environment, stdin: stdin ?? Data())
      .finish(deadline: deadline)
  }

  /// Runs `mailboxctl arguments` with stdout a pipe whose reader is gone before it starts, so
  /// its first write fails with EPIPE; stdin is `input` (a file) or empty. Returns the exit
  /// status and stderr.
  static func runWithoutReader(_ arguments: [String], input: URL? = nil) throws -> (
    status: Int32, stderr: String
  ) {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    let out = Pipe()
    try out.fileHandleForReading.close()
    process.standardOutput = out
    let err = Pipe()
    process.standardError = err
    process.standardInput =
      try input.map { try FileHandle(forReadingFrom: $0) } ?? FileHandle.nullDevice
    try process.run()
    try? out.fileHandleForWriting.close()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    guard waitUntil(deadline: 120, { !process.isRunning }) else {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ProcessTimeout(arguments: arguments)
    }
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: errors, as: UTF8.self))
  }

  /// Runs `mailboxctl arguments` with its stdout on `stdout`; returns its exit status, how it
  /// ended and its stderr.
  static func run(_ arguments: [String], stdout: FileHandle) throws -> Finished {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    process.standardOutput = stdout
    let err = Pipe()
    process.standardError = err
    try process.run()
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return Finished(
      status: process.terminationStatus, reason: process.terminationReason, stdout: "",
      stderr: stderr)
  }

  /// Starts `mailboxctl arguments` with its output streamed into memory as it arrives.
  static func start(_ arguments: [String], environment: [String: String] = [:]) throws
    -> StreamingProcess
  {
    try StreamingProcess(url, arguments, environment: environment)
  }
}

/// A process whose stdout and stderr can be inspected while it runs.
final class StreamingProcess: Sendable {
  let process: Process
  private let out = Buffer()
  private let err = Buffer()
  private let closed = Buffer()

  /// Bytes collected from one stream, and (in `closed`) how many streams ended.
  final class Buffer: Sendable {
    let data = Locked(Data())
    let count = Locked(0)
  }

  init(_ executable: URL, _ arguments: [String], environment: [String: String]) throws {
    let (process, outPipe, errPipe) = Processes.prepare(
      executable, arguments, environment: environment)
    process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    self.process = process
    for (pipe, buffer) in [(outPipe, out), (errPipe, err)] {
      let handle = pipe.fileHandleForReading
      Thread.detachNewThread { [closed] in
        while true {
          let chunk = handle.availableData
          if chunk.isEmpty { break }
          buffer.data.withLock { $0.append(chunk) }
        }
        closed.count.withLock { $0 += 1 }
      }
    }
    try process.run()
  }

  var stdout: String { String(decoding: out.data.withLock { $0 }, as: UTF8.self) }
  var stderr: String { String(decoding: err.data.withLock { $0 }, as: UTF8.self) }

  func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits for exit (and the end of both streams) within `deadline` seconds.
  func finish(deadline: TimeInterval = 60) throws -> Finished {
    let done = waitUntil(deadline: deadline) {
      !process.isRunning && closed.count.withLock { $0 } == 2
    }
    if !done {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ProcessTimeout(arguments: process.arguments ?? [])
    }
    process.waitUntilExit()
    return Finished(
      status: process.terminationStatus, reason: process.terminationReason, stdout: stdout,
      stderr: stderr)
  }
}

/// JSON Lines as dictionaries.
func jsonLines(_ text: String) throws -> [[String: Any]] {
  try text.split(separator: "\n").map { line in
    try #require(
      try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
  }
}

extension TemporaryContainer {
  /// The `--container` and `--namespace` arguments for this container.
  func arguments(namespace: String = "jobs") -> [String] {
    ["--container", url.path, "--namespace", namespace]
  }

  /// An untyped mailbox here (the CLI's view).
  func rawMailbox(
    namespace: String = "jobs", limits: AppGroupMailboxLimits = .init(),
    overflowPolicy: AppGroupMailboxOverflowPolicy = .rejectNewest
  ) throws -> AppGroupRawMailbox {
    try AppGroupRawMailbox(
      containerURL: url, namespace: namespace, limits: limits, overflowPolicy: overflowPolicy)
  }
}
