import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A claim learns from the process's inotify instance whether anything arrived in `delayed/` or
/// replaced `settings` (``SpoolArrivals``), instead of an fstat(2) and an fstatat(2) per claim,
/// and still sees a hold, a resume and a delayed message another process writes; without
/// inotify it looks with those calls as before.
@Suite struct ClaimArrivalsTests {
  /// How many fstat(2) and fstatat(2) calls `body` made on this task: counted by fault rules
  /// that never fire (each call only lowers their skip count).
  static func stats(
    failing extra: [FaultInjection.Rule] = [], _ body: () throws -> Void
  ) throws -> (fstat: Int, fstatat: Int) {
    let never = 1_000_000_000
    let rules: [FaultInjection.Rule] =
      extra + [
        .init(call: "fstat", errno: EIO, skip: never),
        .init(call: "fstatat", errno: EIO, skip: never),
      ]
    let (_, left) = try FaultInjection.withRules(rules) { try body() }
    func made(_ call: String) -> Int { never - (left.first { $0.call == call }?.skip ?? never) }
    return (made("fstat"), made("fstatat"))
  }

  /// Enqueues a message due in `delay` seconds from another process (`mailboxctl`).
  static func enqueueDelayed(_ container: TemporaryContainer, _ text: String, delay: Double)
    throws
  {
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--delay", String(delay), "--data", text])
    #expect(result.status == 0, "\(result.stderr)")
  }

  @Test func `An idle claim makes neither call, and sees another process's hold and delay`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer = try container.rawMailbox()
    #expect(try consumer.claimPending().isEmpty)  // watches, then looks
    let idle = try Self.stats {
      let claims = try consumer.claimPending()
      #expect(claims.isEmpty)
    }
    #expect(idle.fstat == 0)
    #expect(idle.fstatat == 0)
    // A hold written by another process is honoured by the next claim.
    #expect(try Mailboxctl.run(["hold"] + container.arguments()).status == 0)
    try consumer.enqueue(Data("1".utf8))
    #expect(try consumer.claimPending().isEmpty)
    #expect(try Mailboxctl.run(["resume"] + container.arguments()).status == 0)
    let resumed = try consumer.claimPending()
    #expect(resumed.map { String(decoding: $0.payload, as: UTF8.self) } == ["1"])
    for claim in resumed { try claim.acknowledge() }
    // A delayed message from another process: not before it is due, then at once. "Not
    // before" is checked by the time the claim came, not by a claim made soon after the
    // enqueue (a loaded machine, or a sanitizer, can let the delay run out before it).
    let enqueuing = Date()
    try Self.enqueueDelayed(container, "2", delay: 0.3)
    var claimed: [String] = []
    let due = waitUntil(deadline: 60) {
      claimed += ((try? consumer.claimPending()) ?? []).map {
        String(decoding: $0.payload, as: UTF8.self)
      }
      return !claimed.isEmpty
    }
    #expect(due)
    #expect(claimed == ["2"])
    #expect(Date().timeIntervalSince(enqueuing) >= 0.3)
  }

  /// At the watch limit (`ENOSPC`, simulated for this task only: the test process shares its
  /// inotify instance with other tests, so `inotify_init1` is not called again here).
  @Test func `Without inotify a claim looks with both calls and still sees a hold and a delay`()
    throws
  {
    let container = try TemporaryContainer()
    let consumer = try container.rawMailbox()
    let unavailable = FaultInjection.Rule(call: "inotify_add_watch", errno: ENOSPC, count: Int.max)
    _ = try Self.stats(failing: [unavailable]) {
      let claims = try consumer.claimPending()
      #expect(claims.isEmpty)
    }
    let idle = try Self.stats {
      let claims = try consumer.claimPending()
      #expect(claims.isEmpty)
    }
    #expect(idle.fstat >= 1)  // delayed/
    #expect(idle.fstatat >= 1)  // settings
    #expect(try Mailboxctl.run(["hold"] + container.arguments()).status == 0)
    try consumer.enqueue(Data("1".utf8))
    #expect(try consumer.claimPending().isEmpty)
    #expect(try Mailboxctl.run(["resume"] + container.arguments()).status == 0)
    #expect(try consumer.claimPending().count == 1)
    try Self.enqueueDelayed(container, "2", delay: 0.3)
    var claimed = 0
    #expect(
      waitUntil(deadline: 60) {
        claimed += (try? consumer.claimPending().count) ?? 0
        return claimed > 0
      })
  }
}
