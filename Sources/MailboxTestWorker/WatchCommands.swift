import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

#if DEBUG
  @testable import AppGroupMailbox
#endif

// Commands for the wake-up tests (see Tests/AppGroupMailboxTests/Watching/). Each logs lines to
// the file LOG (appended and flushed per line) so a test can follow it while it runs:
// `ready`, `woke`, `claimed <value> <micros>`, `waiting` (about to wait again), `reopened`,
// `diagnostic <event>`, `done`.
//
// `wait-loop CONTAINER NAMESPACE LOG`: claims everything, then waits with no timeout on one
//   watcher, again and again; stops after claiming -1.
// `drain CONTAINER NAMESPACE LOG BATCH`: `AppGroupMailbox.drain`; stops after claiming -1; opens
//   the mailbox again after `mailboxDirectoryRemoved`.
// `name-drain CONTAINER NAME LOG NAMESPACE...`: waits on a notification name and drains every
//   namespace after each wake-up; stops after claiming -1.
// `fd-cycles CONTAINER NAMESPACE COUNT`: COUNT open-wait-close cycles; prints `fds A B` and
//   `threads A B` (before and after).
// `fault-wait CONTAINER NAMESPACE LOG CALL ERRNO`: (debug builds) makes every CALL fail with
//   ERRNO, then waits like `wait-loop` with a 50 ms polling interval.
// `wake-latency CONTAINER COUNT [rename]`: runs `latency-consumer` in a child process and prints
//   wake-up latency percentiles for COUNT enqueues, or with `rename` for COUNT files renamed into
//   `pending/` (timing only the rename, as a C inotify loop does). Run a release build.

/// Appends lines to a log file, flushing each.
final class LineLog: Sendable {
  let fd: Int32

  init(_ path: String) {
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
  }

  func write(_ line: String) {
    var text = line
    text += "\n"
    _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
  }

  deinit { close(fd) }
}

func nowMicros() -> Int64 {
  var spec = timespec()
  clock_gettime(CLOCK_REALTIME, &spec)
  return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
}

func openIntMailbox(
  _ container: String, _ namespace: String, log: LineLog?, notificationName: String? = nil,
  durability: AppGroupMailboxDurability = .full
) throws -> AppGroupMailbox<Int> {
  try AppGroupMailbox<Int>(
    containerURL: URL(fileURLWithPath: container), namespace: namespace,
    limits: AppGroupMailboxLimits(maxMessages: 1_000_000), notificationName: notificationName,
    diagnostic: { event in
      // The mailbox may have been created by the test with other limits; those apply.
      if case .storedSettingsApplied = event { return }
      log?.write("diagnostic \(event)")
    }, durability: durability)
}

/// Claims and acknowledges until empty, logging each value; returns whether -1 was claimed.
func claimAll(_ mailbox: AppGroupMailbox<Int>, _ log: LineLog) throws -> Bool {
  var stop = false
  while true {
    let claims = try mailbox.claimPending(limit: 64)
    if claims.isEmpty { return stop }
    for claim in claims {
      log.write("claimed \(claim.message) \(nowMicros())")
      try claim.acknowledge()
      if claim.message == -1 { stop = true }
    }
  }
}

func waitLoop(_ mailbox: AppGroupMailbox<Int>, _ watcher: AppGroupMailboxWatcher, _ log: LineLog)
  throws
{
  if try claimAll(mailbox, log) { return }
  log.write("ready")
  while true {
    guard try watcher.wait(timeout: nil) else { continue }
    log.write("woke")
    if try claimAll(mailbox, log) { break }
    log.write("waiting")
  }
}

/// Runs an async body to completion from synchronous code (the worker's main thread).
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
  let result = Locked<(any Error)??>(nil)
  let done = DispatchSemaphore(value: 0)
  Task {
    do {
      try await body()
      result.withLock { $0 = .some(nil) }
    } catch {
      result.withLock { $0 = .some(error) }
    }
    done.signal()
  }
  done.wait()
  if let error = result.withLock({ $0 }) ?? nil { throw error }
}

func countEntries(_ path: String) -> Int {
  (try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1
}

let watchCommands: [WorkerCommand] = [
  WorkerCommand(name: "wait-loop") { args in
    let log = LineLog(args[2])
    let mailbox = try openIntMailbox(args[0], args[1], log: log)
    let watcher = try mailbox.wakeUps()
    defer { watcher.close() }
    try waitLoop(mailbox, watcher, log)
    log.write("done")
  },
  WorkerCommand(name: "drain") { args in
    let log = LineLog(args[2])
    let batch = Int(args[3])!
    try runBlocking {
      log.write("ready")
      while true {
        let mailbox = try openIntMailbox(args[0], args[1], log: log)
        do {
          try await mailbox.drain(batchSize: batch) { claim in
            log.write("claimed \(claim.message) \(nowMicros())")
            if claim.message == -1 { withUnsafeCurrentTask { $0?.cancel() } }
          }
          break
        } catch AppGroupMailboxError.mailboxDirectoryRemoved {
          log.write("reopened")
        }
      }
    }
    log.write("done")
  },
  WorkerCommand(name: "name-drain") { args in
    let log = LineLog(args[2])
    let mailboxes = try args[3...].map { try openIntMailbox(args[0], $0, log: log) }
    let watcher = try AppGroupMailboxWatcher(
      notificationName: args[1], containerURL: URL(fileURLWithPath: args[0]))
    defer { watcher.close() }
    var first = true
    while try watcher.wait(timeout: nil) {
      if !first { log.write("woke") }
      var stop = false
      for mailbox in mailboxes where try claimAll(mailbox, log) { stop = true }
      if stop { break }
      log.write(first ? "ready" : "waiting")
      first = false
    }
    log.write("done")
  },
  WorkerCommand(name: "fd-cycles") { args in
    let container = URL(fileURLWithPath: args[0])
    let mailbox = try openIntMailbox(args[0], args[1], log: nil)
    let count = Int(args[2])!
    // One cycle of each kind first, so state Dispatch creates lazily once per process (its
    // epoll, eventfd and timerfd descriptors, worker threads) exists before counting.
    try mailbox.wakeUps().close()
    _ = try mailbox.wait(timeout: 0.001)
    try AppGroupMailboxWatcher(notificationName: "n", containerURL: container).close()
    let fdsBefore = countEntries("/proc/self/fd")
    let threadsBefore = countEntries("/proc/self/task")
    for cycle in 0..<count {
      switch cycle % 4 {
      case 0:
        let watcher = try mailbox.wakeUps()
        _ = try watcher.wait(timeout: 0)
        watcher.close()
      case 1:
        _ = try mailbox.wait(timeout: 0.001)
      case 2:
        let watcher = try AppGroupMailboxWatcher(notificationName: "n", containerURL: container)
        _ = try watcher.wait(timeout: 0)
        watcher.close()
      default:
        // Dropped without close(): releasing the last reference closes it.
        _ = try mailbox.wakeUps().wait(timeout: 0)
      }
    }
    print("fds \(fdsBefore) \(countEntries("/proc/self/fd"))")
    print("threads \(threadsBefore) \(countEntries("/proc/self/task"))")
  },
  WorkerCommand(name: "fault-wait") { args in
    #if DEBUG
      let log = LineLog(args[2])
      FaultInjection.add(
        .init(call: args[3], errno: Int32(args[4])!, skip: 0, count: Int.max))
      let mailbox = try openIntMailbox(args[0], args[1], log: log)
      // A first cycle (not logged) lets Dispatch create its lazy descriptors before counting.
      // Its timer fires a few times, so Dispatch has created its timer descriptor.
      let warmUp = try openIntMailbox(args[0], args[1], log: nil).wakeUps(pollingInterval: 0.01)
      _ = try warmUp.wait(timeout: 0.1)
      warmUp.close()
      let fdsBefore = countEntries("/proc/self/fd")
      let watcher = try mailbox.wakeUps(pollingInterval: 0.05)
      log.write("polling \(watcher.isPolling)")
      try waitLoop(mailbox, watcher, log)
      watcher.close()
      log.write("fds \(fdsBefore) \(countEntries("/proc/self/fd"))")
      log.write("done")
    #else
      throw AppGroupMailboxError.invalidLimit("fault-wait needs a debug build")
    #endif
  },
  WorkerCommand(name: "latency-consumer") { args in
    let mailbox = try openIntMailbox(args[0], args[1], log: nil, durability: .relaxed)
    let watcher = try mailbox.wakeUps()
    defer { watcher.close() }
    emitLine("ready")
    var remaining = Int(args[2])!
    while remaining > 0 {
      guard try watcher.wait(timeout: nil) else { continue }
      let woke = nowMicros()
      for claim in try mailbox.claimPending() {
        emitLine(String(woke))
        remaining -= 1
        try claim.acknowledge()
      }
    }
  },
  WorkerCommand(name: "wake-latency") { args in
    let count = Int(args[1])!
    let byRename = args.count > 2 && args[2] == "rename"
    let mailbox = try openIntMailbox(args[0], "latency", log: nil, durability: .relaxed)
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["latency-consumer", args[0], "latency", String(count)]
    let pipe = Pipe()
    child.standardOutput = pipe
    try child.run()
    let reader = pipe.fileHandleForReading
    var buffered = Data()
    func readLine() -> String? {
      while true {
        if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
          buffered.removeSubrange(buffered.startIndex...newline)
          return line
        }
        let chunk = reader.availableData
        if chunk.isEmpty { return nil }
        buffered += chunk
      }
    }
    guard readLine() == "ready" else { throw AppGroupMailboxError.containerUnavailable }
    let namespace = args[0] + "/AppGroupMailbox/latency"
    var samples: [Int64] = []
    var enqueueCosts: [Int64] = []
    for index in 0..<count {
      let start: Int64
      if byRename {
        // Publish as another program would: write the file in tmp/, then time only the rename.
        let id = UUID().uuidString.lowercased()
        let micros = nowMicros()
        let header =
          "{\"enqueuedAt\":\(micros),\"format\":1,\"id\":\"\(id)\",\"messageType\":\"\"}\n\(index)"
        let stem = String(format: "%016lld-%020d-", micros, index + 1) + id + "-0.msg"
        let temporary = namespace + "/tmp/latency.tmp"
        try Data(header.utf8).write(to: URL(fileURLWithPath: temporary))
        start = nowMicros()
        guard rename(temporary, namespace + "/pending/" + stem) == 0 else {
          throw AppGroupMailboxError.containerUnavailable
        }
      } else {
        start = nowMicros()
        try mailbox.enqueue(index)
        enqueueCosts.append(nowMicros() - start)
      }
      guard let line = readLine(), let woke = Int64(line) else { break }
      samples.append(woke - start)
    }
    child.waitUntilExit()
    func percentile(_ values: [Int64], _ p: Double) -> Int64 {
      let sorted = values.sorted()
      return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    print(
      "wake-latency \(byRename ? "rename" : "enqueue") samples=\(samples.count)"
        + " p50=\(percentile(samples, 0.5))us p99=\(percentile(samples, 0.99))us"
        + " max=\(samples.max() ?? 0)us"
        + (byRename
          ? " (rename into pending/ to wake in the other process)"
          : " (enqueue start to wake in the other process, relaxed durability);"
            + " enqueue itself p50=\(percentile(enqueueCosts, 0.5))us"
            + " p99=\(percentile(enqueueCosts, 0.99))us"))
  },
]
