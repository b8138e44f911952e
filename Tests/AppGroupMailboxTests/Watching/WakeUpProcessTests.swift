import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Wake-ups between real processes (case C10 and issue 4). The consumer is a worker process
/// waiting with no timeout; the actions come from this test process. 500 ms is a correctness
/// deadline (`AGM_WAKE_DEADLINE_MS` widens it); the benchmark measures latency.
@Suite struct WakeUpProcessTests {
  static let worker = Processes.product("MailboxTestWorker")

  /// Starts a worker command and waits until it logged `ready` (and, when `watches` is given,
  /// holds that many inotify watches).
  func startConsumer(
    _ arguments: [String], log: WorkerLog, watches: Int? = nil
  ) throws -> RunningProcess {
    let process = try Processes.start(Self.worker, arguments)
    let ready = waitUntil {
      log.lines.contains("ready")
        && (watches.map { WatchSupport.inotifyWatchCount(pid: process.pid) >= $0 } ?? true)
    }
    if !ready { process.signal(SIGKILL) }
    try #require(ready, "consumer never became ready: \(log.lines)")
    return process
  }

  /// Stops `process` with SIGSTOP and waits until every thread is stopped.
  func stopProcess(_ process: RunningProcess) throws {
    process.signal(SIGSTOP)
    try #require(waitUntil { WatchSupport.isStopped(pid: process.pid) })
  }

  /// Asserts `value` was claimed within the wake-up deadline after `actionEnded`.
  func expectPromptClaim(_ value: Int, after actionEnded: Int64, log: WorkerLog) throws {
    let claimed = try #require(log.waitForClaim(value), "never claimed \(value): \(log.lines)")
    #expect(claimed - actionEnded <= WatchSupport.wakeDeadlineMicros)
    // Let a wait-loop consumer go back to waiting, so the next action meets a waiting consumer.
    if log.lines.contains("ready") && !log.lines.contains("reopened") {
      #expect(waitUntil { ["ready", "waiting"].contains(log.lines.last) })
    }
  }

  /// Ends a consumer by enqueueing -1 and checks it exits cleanly.
  func stop(_ consumer: RunningProcess, _ mailbox: AppGroupMailbox<Int>) throws -> Finished {
    try mailbox.enqueue(-1)
    let finished = try consumer.finish(deadline: 60)
    #expect(finished.status == 0, "\(finished.stderr)")
    return finished
  }

  @Test func `An enqueue in another process wakes a waiting consumer, which claims it`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let consumer = try startConsumer(
      ["wait-loop", container.url.path, "jobs", log.path], log: log, watches: 2)
    try mailbox.enqueue(7)
    try expectPromptClaim(7, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    #expect(log.events == ["ready", "woke", "claimed 7", "waiting", "woke", "claimed -1", "done"])
  }

  @Test func `A release in another process wakes a waiting consumer, which claims it`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try mailbox.enqueue(8)
    let held = try mailbox.claimPending()
    try #require(held.map(\.message) == [8])
    let consumer = try startConsumer(
      ["wait-loop", container.url.path, "jobs", log.path], log: log, watches: 2)
    try held[0].release()
    try expectPromptClaim(8, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    #expect(log.events == ["ready", "woke", "claimed 8", "waiting", "woke", "claimed -1", "done"])
  }

  @Test func `A recovery in another process wakes a waiting consumer, which claims it`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try mailbox.enqueue(9)
    try #require(try mailbox.claimPending().map(\.message) == [9])
    let consumer = try startConsumer(
      ["wait-loop", container.url.path, "jobs", log.path], log: log, watches: 2)
    // The holder's lease lapses: rename the claim to a deadline in the past (no pending event).
    let claimedName = try #require(container.names("claimed").first)
    var lapsed = try #require(ClaimedName(parsing: claimedName))
    lapsed.leaseUntilMicros = 1
    let claimedArea = container.area("claimed").path
    #expect(rename(claimedArea + "/" + claimedName, claimedArea + "/" + lapsed.fileName) == 0)
    try mailbox.performMaintenance()
    try expectPromptClaim(9, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    #expect(log.events == ["ready", "woke", "claimed 9", "waiting", "woke", "claimed -1", "done"])
  }

  @Test func `A valid message file moved in with mv wakes a waiting consumer`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let consumer = try startConsumer(
      ["wait-loop", container.url.path, "jobs", log.path], log: log, watches: 2)
    let id = UUID()
    let micros = WatchSupport.nowMicros()
    let name = PendingName(key: MessageKey(micros: micros, sequence: 1), id: id, attempts: 0)
    let staged = container.url.appendingPathComponent("staged.msg")
    try Envelope.encode(id: id, enqueuedAt: micros, messageType: "", payload: Data("10".utf8))
      .write(to: staged)
    let mover = try Processes.start(
      URL(fileURLWithPath: "/bin/mv"),
      [staged.path, container.area("pending").appendingPathComponent(name.fileName).path])
    #expect(try mover.finish(deadline: 30).status == 0)
    try expectPromptClaim(10, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    #expect(log.events == ["ready", "woke", "claimed 10", "waiting", "woke", "claimed -1", "done"])
  }

  @Test func `Files written and deleted only in tmp wake nobody and deliver nothing`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let consumer = try startConsumer(
      ["wait-loop", container.url.path, "jobs", log.path], log: log, watches: 2)
    let tmp = container.area("tmp")
    for index in 0..<500 {
      let file = tmp.appendingPathComponent("\(index).tmp")
      try Data("x".utf8).write(to: file)
      try FileManager.default.removeItem(at: file)
    }
    // A worker process does the same, then a real enqueue marks the end.
    let writer = try Processes.start(
      URL(fileURLWithPath: "/bin/sh"),
      ["-c", "for i in $(seq 1 200); do echo x > \"$1/w$i\"; rm \"$1/w$i\"; done", "sh", tmp.path])
    #expect(try writer.finish(deadline: 60).status == 0)
    #expect(log.events == ["ready"])
    try mailbox.enqueue(11)
    try expectPromptClaim(11, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    #expect(log.events == ["ready", "woke", "claimed 11", "waiting", "woke", "claimed -1", "done"])
    #expect(container.names("tmp") == [])
    #expect(container.names("pending") == [])
  }

  @Test func `A consumer waiting on a notification name wakes for any of its mailboxes`() throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let consumer = try startConsumer(
      ["name-drain", container.url.path, "jobs ready", log.path, "first", "second"], log: log,
      watches: 1)
    func named(_ namespace: String) throws -> AppGroupMailbox<Int> {
      try AppGroupMailbox<Int>(
        containerURL: container.url, namespace: namespace, notificationName: "jobs ready")
    }
    let first = try named("first")
    let second = try named("second")
    try second.enqueue(12)
    try expectPromptClaim(12, after: WatchSupport.nowMicros(), log: log)
    try first.enqueue(13)
    try expectPromptClaim(13, after: WatchSupport.nowMicros(), log: log)
    // Enqueued without the name (no post), so only the release below wakes the consumer.
    let unnamed: AppGroupMailbox<Int> = try container.mailbox(Int.self, namespace: "first")
    try unnamed.enqueue(14)
    let held = try first.claimPending()
    try #require(held.map(\.message) == [14])
    try held[0].release()
    try expectPromptClaim(14, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, first)
    #expect(
      log.events == [
        "ready", "woke", "claimed 12", "waiting", "woke", "claimed 13", "waiting", "woke",
        "claimed 14", "waiting", "woke", "claimed -1", "done",
      ])
    #expect(
      FileManager.default.fileExists(
        atPath: container.url.appendingPathComponent("AppGroupMailbox/@notify/jobs%20ready").path))
  }

  @Test func `20,000 enqueues while the consumer is stopped are all drained after SIGCONT`() throws
  {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: AppGroupMailboxLimits(maxMessages: 1_000_000), durability: .relaxed)
    let consumer = try startConsumer(
      ["drain", container.url.path, "jobs", log.path, "512"], log: log, watches: 2)
    try stopProcess(consumer)
    for value in 0..<20_000 { try mailbox.enqueue(value) }
    try mailbox.enqueue(-1)
    consumer.signal(SIGCONT)
    let finished = try consumer.finish(deadline: 600)
    #expect(finished.status == 0, "\(finished.stderr)")
    let claimed = log.events.filter { $0.hasPrefix("claimed ") }
    #expect(claimed == (0..<20_000).map { "claimed \($0)" } + ["claimed -1"])
    #expect(log.lines.contains("diagnostic wakeUpQueueOverflowed"))
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }

  @Test func `Deleting and recreating the namespace while a consumer waits does not hang it`()
    throws
  {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let consumer = try startConsumer(
      ["drain", container.url.path, "jobs", log.path, "16"], log: log, watches: 2)
    let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs")
    // Deleted outright (the consumer stopped, so it cannot recreate it half-way).
    try stopProcess(consumer)
    try FileManager.default.removeItem(at: namespace)
    consumer.signal(SIGCONT)
    #expect(waitUntil { log.lines.filter { $0 == "reopened" }.count == 1 })
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try mailbox.enqueue(15)
    try expectPromptClaim(15, after: WatchSupport.nowMicros(), log: log)
    // Moved away, then deleted, while the consumer runs.
    #expect(waitUntil { WatchSupport.inotifyWatchCount(pid: consumer.pid) >= 2 })
    let trash = container.url.appendingPathComponent("trash")
    try FileManager.default.moveItem(at: namespace, to: trash)
    try FileManager.default.removeItem(at: trash)
    #expect(waitUntil { log.lines.filter { $0 == "reopened" }.count == 2 })
    let recreated: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    try recreated.enqueue(16)
    try expectPromptClaim(16, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, recreated)
    #expect(
      log.events == [
        "ready", "reopened", "claimed 15", "reopened", "claimed 16", "claimed -1", "done",
      ])
  }

  @Test func `2,000 open-wait-close cycles leave the descriptor count unchanged`() throws {
    let container = try TemporaryContainer()
    let result = try Processes.runWorker(
      ["fd-cycles", container.url.path, "jobs", "2000"], deadline: 300)
    #expect(result.status == 0, "\(result.stderr)")
    let fds = try #require(result.lines.first { $0.hasPrefix("fds ") }).split(separator: " ")
    #expect(fds.count == 3 && fds[1] == fds[2], "\(result.lines)")
    let threads = try #require(result.lines.first { $0.hasPrefix("threads ") })
      .split(separator: " ").compactMap { Int($0) }
    try #require(threads.count == 2)
    #expect(threads[1] <= threads[0] + 4, "threads grew: \(threads)")
  }

  @Test(arguments: [("inotify_init1", EMFILE), ("inotify_add_watch", ENOSPC)])
  func `An inotify limit falls back to polling, says so, and still wakes the consumer`(
    call: String, errno code: Int32
  ) throws {
    let container = try TemporaryContainer()
    let log = WorkerLog(in: container)
    let mailbox: AppGroupMailbox<Int> = try container.mailbox(Int.self)
    let consumer = try startConsumer(
      ["fault-wait", container.url.path, "jobs", log.path, call, String(code)], log: log)
    #expect(WatchSupport.inotifyWatchCount(pid: consumer.pid) == 0)
    try mailbox.enqueue(17)
    try expectPromptClaim(17, after: WatchSupport.nowMicros(), log: log)
    _ = try stop(consumer, mailbox)
    let lines = log.lines
    #expect(
      Array(lines.prefix(3)) == [
        "diagnostic wakeUpsPolling(systemCall: \"\(call)\", errno: \(code))", "polling true",
        "ready",
      ])
    let fds = try #require(lines.first { $0.hasPrefix("fds ") }).split(separator: " ")
    #expect(fds.count == 3 && fds[1] == fds[2], "\(lines)")
    #expect(lines.last == "done")
  }
}
