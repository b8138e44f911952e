import Foundation
import Glibc
import Synchronization
import Testing

@testable import AppGroupMailbox

/// Whole microseconds since the Unix epoch of `date`, rounded (as the spool stores it).
func micros(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }

extension TemporaryContainer {
  /// The parsed names in `pending/`, oldest first.
  func pendingNames(namespace: String = "jobs") -> [PendingName] {
    names("pending", namespace: namespace).compactMap(PendingName.init(parsing:)).sorted {
      $0.key < $1.key
    }
  }

  /// The parsed names in `claimed/`.
  func claimedNames(namespace: String = "jobs") -> [ClaimedName] {
    names("claimed", namespace: namespace).compactMap(ClaimedName.init(parsing:))
  }

  /// The `state` file's counters, nil when missing or unreadable.
  func counters(namespace: String = "jobs") -> SpoolCounters? {
    let url = url.appendingPathComponent("AppGroupMailbox/\(namespace)/state")
    guard let data = try? Data(contentsOf: url) else { return nil }
    return SpoolCounters(line: Array(data))
  }

  /// Checks the depth counter of `namespace` as docs/FORMAT.md defines it: a recount of the names
  /// gives exactly `expected`, and the stored counter is not below that (a removal leaves it
  /// high; a low counter would let an enqueue pass the bound). The recount is written back, as
  /// any first use of the lock in a new instance does.
  func expectDepth(
    _ expected: Int, namespace: String = "jobs", sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let stored = try #require(counters(namespace: namespace), sourceLocation: sourceLocation)
    let spool = try mailbox(String.self, namespace: namespace).spool
    let recounted = try spool.withStateLock { try spool.recount(stored: $0).depth }
    #expect(recounted == expected, "names on disk", sourceLocation: sourceLocation)
    #expect(stored.depth >= recounted, "stored counter", sourceLocation: sourceLocation)
  }

  /// Writes `contents` as `area/name`, creating the area when needed.
  func plant(_ area: String, _ name: String, _ contents: Data, namespace: String = "jobs") throws {
    let directory = self.area(area, namespace: namespace)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try contents.write(to: directory.appendingPathComponent(name))
  }

  /// Sets the modification time of `area/name` to `date` (git and copies do not keep mtimes).
  func setModified(_ area: String, _ name: String, to date: Date, namespace: String = "jobs")
    throws
  {
    let path = self.area(area, namespace: namespace).appendingPathComponent(name).path
    let whole = floor(date.timeIntervalSince1970)
    let fraction = Int((date.timeIntervalSince1970 - whole) * 1_000_000_000)
    var times = [
      timespec(tv_sec: Int(whole), tv_nsec: fraction),
      timespec(tv_sec: Int(whole), tv_nsec: fraction),
    ]
    guard utimensat(AT_FDCWD, path, &times, 0) == 0 else {
      throw SystemCallError.current("utimensat")
    }
  }
}

/// A valid message file for `message` (as this version writes it).
func messageFile<M: Encodable>(
  _ message: M, id: UUID, enqueuedAt: Int64, messageType: String = String(reflecting: M.self)
) throws -> Data {
  try Envelope.encode(
    id: id, enqueuedAt: enqueuedAt, messageType: messageType,
    payload: JSONEncoder().encode(message))
}

/// A worker process driven line by line: each command written to its stdin is answered by one
/// line on its stdout.
final class InteractiveWorker: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private var buffer = Data()

  init(_ arguments: [String]) throws {
    process.executableURL = Processes.product("MailboxTestWorker")
    // Copied here (the array and each string), so what Foundation.Process keeps past the end of
    // the test process was allocated by this helper, which scripts/lsan.supp names.
    process.arguments = arguments.map { String(decoding: Array($0.utf8), as: UTF8.self) }
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    try process.run()
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// Reads one line, failing after `deadline` seconds (a hang is a failure, not a wait).
  func readLine(deadline: TimeInterval = 60) throws -> String {
    let handle = output.fileHandleForReading
    let limit = Date().addingTimeInterval(deadline)
    while true {
      if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: buffer[..<newline], as: UTF8.self)
        buffer.removeSubrange(...newline)
        return line
      }
      var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
      let remaining = Int32(max(0, limit.timeIntervalSinceNow) * 1000)
      guard remaining > 0, poll(&poller, 1, remaining) > 0 else {
        throw ProcessTimeout(arguments: process.arguments ?? [])
      }
      let chunk = handle.availableData
      if chunk.isEmpty { throw ProcessTimeout(arguments: process.arguments ?? []) }
      buffer.append(chunk)
    }
  }

  /// Sends `command` and returns the answer line.
  func send(_ command: String) throws -> String {
    input.fileHandleForWriting.write(Data((command + "\n").utf8))
    return try readLine()
  }

  /// Closes stdin and waits for a clean exit.
  func finish() throws -> Int32 {
    try input.fileHandleForWriting.close()
    let limit = Date().addingTimeInterval(60)
    while process.isRunning && Date() < limit { usleep(2_000) }
    if process.isRunning { throw ProcessTimeout(arguments: process.arguments ?? []) }
    return process.terminationStatus
  }

  /// Kills the process with SIGKILL and reaps it.
  func kill9() {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }
}

/// The fixed id `index` of the worker's `core-import`: `00000000-0000-4000-8000-<index:12>`.
func importID(_ index: Int) -> UUID {
  let digits = String(index)
  return UUID(
    uuidString: "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - digits.count)
      + digits)!
}
