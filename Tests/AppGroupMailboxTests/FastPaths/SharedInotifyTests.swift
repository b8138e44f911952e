import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// One inotify instance per process for every watcher and every pending index (issue 15 item
/// 3; System/InotifyHub.swift): a process with many open mailboxes stays within
/// `fs.inotify.max_user_instances` (128 per user by default), and the pending indexes keep
/// their guarantees on the shared descriptor. The index tests run in worker processes, where
/// no other test's watcher starts the instance's reader thread or shares its queue.
@Suite struct SharedInotifyTests {
  /// The inotify descriptors of process `pid` (its /proc/PID/fd links to
  /// `anon_inode:inotify`, proc(5)).
  static func inotifyInstanceCount(pid: Int32) -> Int {
    let directory = "/proc/\(pid)/fd"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.filter {
      (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0))
        == "anon_inode:inotify"
    }.count
  }

  @Test
  func `A process that claimed from 1,000 mailboxes and watches one holds one inotify instance`()
    throws
  {
    let container = try TemporaryContainer()
    let ready = container.url.appendingPathComponent("ready").path
    let go = container.url.appendingPathComponent("go").path
    let worker = try Processes.start(
      Processes.product("MailboxTestWorker"),
      ["inotify-instances", container.url.path, "1000", ready, go])
    let started = waitUntil(deadline: 300) { FileManager.default.fileExists(atPath: ready) }
    if !started {
      worker.signal(SIGKILL)
      let stderr = try worker.finish().stderr
      Issue.record("the worker never got ready: \(stderr)")
      return
    }
    let instances = Self.inotifyInstanceCount(pid: worker.pid)
    let watches = WatchSupport.inotifyWatchCount(pid: worker.pid)
    _ = FileManager.default.createFile(atPath: go, contents: nil)
    let result = try worker.finish()
    #expect(result.status == 0, "\(result.stderr)")
    #expect(instances == 1)
    // Three watches per mailbox that claimed: its index's (pending/) and its claims' arrivals
    // (delayed/ and the namespace, SpoolArrivals). The watcher's three are the first mailbox's,
    // shared.
    #expect(watches == 3_000)
    // Closed and released: every watch removed, the instance closed, no user left.
    #expect(result.lines == ["holding 1 3000", "after 0 0 0"])
  }

  @Test
  func `Names arriving for one mailbox reach its index when another mailbox's claim reads them`()
    throws
  {
    let container = try TemporaryContainer()
    let result = try Processes.runWorker(["index-cross", container.url.path])
    #expect(result.status == 0, "\(result.stderr)")
    // b's refresh read a's events from the kernel's queue; each index listed once (before its
    // watch could report anything); a's second refresh took the names b's refresh had routed
    // to it, older first.
    #expect(
      result.lines == ["queued true", "queued after b 0", "listings 1 1", "a in order"])
  }

  @Test func `A shared queue overflow makes every index list again and nothing is lost`() throws {
    let container = try TemporaryContainer()
    let result = try Processes.runWorker(["index-overflow", container.url.path], deadline: 300)
    #expect(result.status == 0, "\(result.stderr)")
    // b had no arrivals of its own: it lists again only because of IN_Q_OVERFLOW.
    #expect(result.lines == ["listings 2 2", "a true ordered true"])
  }

  @Test(arguments: [("inotify_init1", EMFILE), ("inotify_add_watch", ENOSPC)])
  func `Without inotify the index lists on every claim and holds no share of the instance`(
    call: String, errno code: Int32
  ) throws {
    let container = try TemporaryContainer()
    let result = try Processes.runWorker(
      ["index-fallback", container.url.path, call, String(code)])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.lines == ["watching false users 0 listings 3", "names in order"])
  }

  @Test func `A watcher still wakes when its events were read by a claim in the same process`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer: AppGroupMailbox<Int> = try container.mailbox(Int.self, durability: .relaxed)
    let producer: AppGroupMailbox<Int> = try container.mailbox(Int.self, durability: .relaxed)
    let watcher = try consumer.wakeUps()
    defer { watcher.close() }
    #expect(try consumer.claimPending().isEmpty)
    let deadline = Double(WatchSupport.wakeDeadlineMicros) / 1e6 * 10
    for value in 0..<20 {
      _ = try watcher.wait(timeout: 0)  // take a wake-up left from the previous round
      try producer.enqueue(value)
      // The claim reads the shared descriptor at once, often before the reader thread does:
      // the watcher's event then reaches it through the reader thread all the same.
      let claims = try consumer.claimPending()
      #expect(claims.map(\.message) == [value])
      for claim in claims { try claim.acknowledge() }
      #expect(try watcher.wait(timeout: deadline))
    }
  }

  @Test func `Claims on many mailboxes from several threads each get every message once in order`()
    throws
  {
    let container = try TemporaryContainer()
    let count = 8
    let perMailbox = 40
    let consumers: [AppGroupMailbox<Int>] = try (0..<count).map {
      try container.mailbox(Int.self, namespace: "m\($0)", durability: .relaxed)
    }
    let producers: [AppGroupMailbox<Int>] = try (0..<count).map {
      try container.mailbox(Int.self, namespace: "m\($0)", durability: .relaxed)
    }
    // A watcher on one of them, so the reader thread runs and competes for the descriptor.
    let watcher = try consumers[0].wakeUps()
    defer { watcher.close() }
    for consumer in consumers { #expect(try consumer.claimPending().isEmpty) }
    let claimed = Locked([[Int]](repeating: [], count: count))
    let failures = Locked([String]())
    // One thread per lane (concurrentPerform would run only as many lanes at once as there
    // are cores): the last lane produces, the others claim.
    let finished = DispatchSemaphore(value: 0)
    for lane in 0...count {
      Thread {
        defer { finished.signal() }
        do {
          if lane == count {
            for value in 0..<perMailbox {
              for producer in producers { try producer.enqueue(value) }
            }
            return
          }
          let limit = Date().addingTimeInterval(60)
          var mine: [Int] = []
          while mine.count < perMailbox, Date() < limit {
            let claims = try consumers[lane].claimPending(limit: 3)
            for claim in claims {
              mine.append(claim.message)
              try claim.acknowledge()
            }
            if claims.isEmpty { usleep(500) }  // the producer is behind: poll again
          }
          claimed.withLock { $0[lane] = mine }
        } catch {
          failures.withLock { $0.append("lane \(lane): \(error)") }
        }
      }.start()
    }
    for _ in 0...count { finished.wait() }
    #expect(failures.withLock { $0 } == [])
    #expect(claimed.withLock { $0 } == Array(repeating: Array(0..<perMailbox), count: count))
  }
}
