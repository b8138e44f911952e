import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// Issue 14, point 3: producers wait for room instead of failing.
@Suite struct BackpressureTests {
  @Test func `A waiting enqueue is woken by an acknowledge and keeps the FIFO order`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(String.self, limits: .init(maxMessages: 1))
    try mailbox.enqueue("first")
    let claim = try #require(try mailbox.claimPending().first)
    let stored = Locked<UUID?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      let producer = try? container.mailbox(String.self)
      stored.withLock { $0 = try? producer?.enqueue("second", waitingUpTo: 60) }
      done.signal()
    }
    // Still waiting while the claim holds the only place.
    #expect(done.wait(timeout: .now() + 0.3) == .timedOut)
    try claim.acknowledge()
    #expect(done.wait(timeout: .now() + 30) == .success)
    let id = try #require(stored.withLock { $0 })
    let next = try #require(try mailbox.claimPending().first)
    #expect(next.id == id)
    #expect(next.message == "second")
  }

  @Test func `A waiting enqueue gives up with mailboxFull after its timeout and writes nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxMessages: 1))
    try raw.enqueue(Data("1".utf8))
    let started = Date()
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try raw.enqueue(Data("2".utf8), waitingUpTo: 0.3)
    }
    #expect(Date().timeIntervalSince(started) >= 0.3)
    // As every timeout: 0 or less tries once, NaN is refused naming what is accepted
    // (-1 and infinity were refused with a bare "timeout"; adversarial review).
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try raw.enqueue(Data("2".utf8), waitingUpTo: -1)
    }
    #expect(
      throws: AppGroupMailboxError.invalidLimit(
        "timeout (accepted: a number of seconds, not NaN; infinity waits without limit)")
    ) {
      try raw.enqueue(Data("2".utf8), waitingUpTo: .nan)
    }
    #expect(container.names("pending").count == 1)
    #expect(container.names("tmp").isEmpty)
  }

  @Test
  func
    `mailboxctl enqueue without --wait names the depth, the bound and the first line not stored`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(maxMessages: 2))
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"], stdin: Data("1\n2\n3\n4\n".utf8))
    #expect(result.status == 75)
    #expect(result.lines.count == 2)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: the mailbox is full (depth 2, maxMessages 2); 2 of 4 "
        + "messages stored (input lines 1 to 2); the first line not stored is line 3: resume "
        + "from it\n")
  }

  @Test func `Four waiting producers put 2,000 lines through a bound of 100 exactly once`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["create"] + location).status == 0)
    let out = container.url.appendingPathComponent("delivered").path
    let drain = try Mailboxctl.start(
      ["drain"] + location + [
        "--follow", "--exec", "/bin/sh", "-c", "cat >> \"$0\"; echo >> \"$0\"; sleep 0.003", out,
      ])
    let producers = try (0..<4).map { producer in
      let input = (0..<500).map { "{\"p\":\(producer),\"n\":\($0)}\n" }.joined()
      return try Processes.start(
        Mailboxctl.url, ["enqueue"] + location + ["--lines", "--wait", "120"],
        stdin: Data(input.utf8))
    }
    for producer in producers {
      let finished = try producer.finish(deadline: 600)
      #expect(finished.status == 0, "\(finished.stderr)")
      #expect(finished.lines.count == 500)
    }
    func delivered() -> [String] {
      ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
        .map(String.init)
    }
    #expect(waitUntil(deadline: 600) { delivered().count >= 2_000 })
    drain.signal(SIGTERM)
    let stopped = try drain.finish(deadline: 120)
    #expect(stopped.status == 0)
    let lines = delivered()
    #expect(lines.count == 2_000)
    let expected = (0..<4).flatMap { p in (0..<500).map { "{\"p\":\(p),\"n\":\($0)}" } }
    #expect(Set(lines) == Set(expected))
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `A producer waiting for room in a mailbox whose pending area is deleted exits 66`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["create"] + location + ["--max-messages", "1"]).status == 0)
    // Full with a delayed message, so pending/ is empty and deleting it makes no room (a
    // deletion that removed a message first would let the producer in).
    let delayed = try Mailboxctl.run(["enqueue"] + location + ["--delay", "3600", "--data", "1"])
    #expect(delayed.status == 0, "\(delayed.stderr)")
    let waiting = try Processes.start(
      Mailboxctl.url, ["enqueue"] + location + ["--wait", "120", "--data", "2"])
    let pending = container.area("pending").path
    // Waiting once it holds the mailbox open (its descriptors name the pending area).
    #expect(
      waitUntil(deadline: 60) {
        let fds = "/proc/\(waiting.process.processIdentifier)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []
        return names.contains {
          (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + $0)) == pending
        }
      })
    #expect(rmdir(pending) == 0)
    let finished = try waiting.finish(deadline: 60)
    #expect(finished.status == 66, "\(finished.stderr)")
    #expect(finished.stderr.contains("deleted, moved or replaced"), "\(finished.stderr)")
  }

  @Test func `A producer waiting for room refuses a message the lowered payload limit refuses`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let created = try Mailboxctl.run(
      ["create"] + location + ["--max-messages", "1", "--max-payload-bytes", "400"])
    #expect(created.status == 0, "\(created.stderr)")
    #expect(try Mailboxctl.run(["enqueue"] + location + ["--data", "1"]).status == 0)
    let payload = "\"" + String(repeating: "y", count: 250) + "\""
    let waiting = try Processes.start(
      Mailboxctl.url, ["enqueue"] + location + ["--wait", "120", "--data", payload])
    // Waiting for room once it holds an inotify instance: its checks against the limit it read
    // (400) passed, and the mailbox was full.
    #expect(
      waitUntil(deadline: 60) {
        let fds = "/proc/\(waiting.process.processIdentifier)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []
        return names.contains {
          (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + "/" + $0))
            == "anon_inode:inotify"
        }
      })
    #expect(try Mailboxctl.run(["config"] + location + ["--max-payload-bytes", "200"]).status == 0)
    let claimed = try Mailboxctl.run(["drain"] + location + ["--limit", "1"])
    #expect(claimed.status == 0, "\(claimed.stderr)")
    // The room it waited for: the enqueue's check under the namespace lock meets the new limit.
    let finished = try waiting.finish(deadline: 60)
    #expect(finished.status == 65, "\(finished.stderr)")
    #expect(
      finished.stderr
        == "mailboxctl: error: enqueue: the message file would be \(payload.utf8.count + 104) "
        + "bytes, over the limit of 200 (the mailbox's maxPayloadBytes); nothing was enqueued\n",
      "\(finished.stderr)")
    #expect(container.names("tmp").isEmpty)
    #expect(container.names("pending").isEmpty)
  }
}
