import Dispatch
import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// What a claim learns from the shared inotify read (``SpoolArrivals``) is consumed by the one
/// claim that read it: another claim on the same spool, or the same claim's next call after a
/// failed refresh, must still act on it (a hold honoured, a resume seen, a delayed message
/// promoted when due). Each race is made deterministic with a ``FaultInjection`` action that
/// runs the second claim, on another thread, at the exact point of the first.
@Suite struct ClaimArrivalsRaceTests {
  /// Runs `body` on a new thread (outside this task's fault rules) and waits for it.
  static func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
      result.withLock { $0 = try? body() }
      done.signal()
    }
    thread.start()
    done.wait()
    return result.withLock { $0 }
  }

  @Test func `A claim concurrent with the claim that read the hold's event claims nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer = try container.rawMailbox()
    #expect(try consumer.claimPending().isEmpty)  // watches, then looks
    try consumer.enqueue(Data("1".utf8))
    // Another process holds the mailbox; both claims below begin after that.
    #expect(try Mailboxctl.run(["hold"] + container.arguments()).status == 0)
    let second = Locked<[String]?>(nil)
    // The first claim reads the settings event, then stats `settings` (fstatat): the second
    // claim runs exactly then, on another thread.
    let runSecond = FaultInjection.Rule(call: "fstatat", errno: 0) {
      let payloads = Self.onAnotherThread {
        try consumer.claimPending().map { claim in
          try claim.acknowledge()
          return String(decoding: claim.payload, as: UTF8.self)
        }
      }
      second.withLock { $0 = payloads }
    }
    let (first, unfired) = try FaultInjection.withRules([runSecond]) {
      try consumer.claimPending()
    }
    try #require(unfired.isEmpty, "the first claim never stated settings")
    #expect(first.isEmpty)
    #expect(second.withLock { $0 } == [], "a claim that began after the hold claimed")
  }

  @Test func `A resume whose settings could not be read once is seen by the next claim`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer = try container.rawMailbox()
    #expect(try consumer.claimPending().isEmpty)  // watches, then looks
    #expect(try Mailboxctl.run(["hold"] + container.arguments()).status == 0)
    try consumer.enqueue(Data("1".utf8))
    #expect(try consumer.claimPending().isEmpty)
    #expect(try Mailboxctl.run(["resume"] + container.arguments()).status == 0)
    // The claim that reads the resume's event cannot open `settings` once (a process at its
    // descriptor limit): it keeps the hold it knew, and claims nothing. Only an open in the
    // namespace directory fails: a sweep a slow machine makes due lists claimed/ first.
    let busy = FaultInjection.Rule(call: "openat", errno: EMFILE, role: .namespaceDirectory)
    let (held, unfired) = try FaultInjection.withRules([busy]) { try consumer.claimPending() }
    try #require(unfired.isEmpty, "the claim never opened settings")
    #expect(held.isEmpty)
    // The descriptors are back: the next claim reads the resume.
    let resumed = try consumer.claimPending()
    #expect(resumed.map { String(decoding: $0.payload, as: UTF8.self) } == ["1"])
    for claim in resumed { try claim.acknowledge() }
  }

  @Test func `A hold whose settings could not be read once is honoured by the next claim`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer = try container.rawMailbox()
    #expect(try consumer.claimPending().isEmpty)  // watches, then looks
    #expect(try Mailboxctl.run(["hold"] + container.arguments()).status == 0)
    // The claim that reads the hold's event cannot stat `settings` once.
    let failing = FaultInjection.Rule(call: "fstatat", errno: EIO)
    _ = try FaultInjection.withRules([failing]) { try consumer.claimPending() }
    // Another producer (whose enqueue re-reads settings in its own spool, not this one).
    try container.rawMailbox().enqueue(Data("2".utf8))
    #expect(try consumer.claimPending().isEmpty, "the stored hold was not honoured")
  }

  @Test func `A delayed message due within a second is promoted though two listings raced`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let consumer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let producer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    #expect(try consumer.claimPending().isEmpty)  // watches, then lists delayed/
    try producer.enqueue("x", delay: 100)
    // The first claim lists delayed/ for x. Once its listing has read the directory (the
    // second getdents64), "m" is delayed and a second claim, on another thread, lists and
    // records "m"'s due time; then the first claim records what its listing saw.
    let raced = Locked(false)
    let race = FaultInjection.Rule(call: "getdents64", errno: 0, skip: 1) {
      _ = try? producer.enqueue("m", delay: 0.5)
      let second = Self.onAnotherThread { try consumer.claimPending().count }
      raced.withLock { $0 = second == 0 }
    }
    let (first, unfired) = try FaultInjection.withRules([race]) { try consumer.claimPending() }
    try #require(unfired.isEmpty, "the first claim never listed delayed/")
    try #require(raced.withLock { $0 })
    #expect(first.isEmpty)
    // "m" is due; less than a second of the mailbox clock passed since any listing.
    clock.advance(0.6)
    let due = try consumer.claimPending()
    #expect(due.map(\.message) == ["m"], "a due delayed message was not promoted")
    for claim in due { try claim.acknowledge() }
  }
}
