import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// An entry that vanishes between a listing and its use is skipped, never an error (issue
/// semantics 8; case C09's deterministic half). The recording hook runs another mailbox's
/// operation just before the system call that uses the listed name.
@Suite struct VanishingEntryTests {
  /// Runs `body` with `action` run once, just before the first call that matches `when`.
  static func interfering(
    when matches: @escaping @Sendable (SystemCallRecording.Call) -> Bool,
    action: @escaping @Sendable () throws -> Void,
    _ body: () throws -> Void
  ) throws {
    let fired = Locked(false)
    let failure = Locked<(any Error)?>(nil)
    let recorder = SystemCallRecording.Recorder { call in
      guard matches(call),
        fired.withLock({ done in
          defer { done = true }; return !done
        })
      else {
        return
      }
      do { try action() } catch { failure.withLock { $0 = error } }
    }
    try SystemCallRecording.recording(recorder, body)
    if let error = failure.withLock({ $0 }) { throw error }
    #expect(fired.withLock { $0 })
  }

  @Test func `A message another consumer claims between our listing and our rename is skipped`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let ours: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let theirs: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try ours.enqueue("A")
    try ours.enqueue("B")
    let pending = ours.spool.directories.pending
    let taken = Locked<[String]>([])
    var claims: [AppGroupMailbox<String>.Claim] = []
    try Self.interfering(
      when: { $0.name == "renameat2" && $0.descriptor == pending },
      action: { taken.withLock { $0 = (try? theirs.claimPending(limit: 1).map(\.message)) ?? [] } }
    ) {
      claims = try ours.claimPending()
    }
    #expect(taken.withLock { $0 } == ["A"])
    #expect(claims.map(\.message) == ["B"])
  }

  @Test func `A claimed file that vanishes before it is opened is skipped`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let claimed = mailbox.spool.directories.claimed
    let claimedURL = container.area("claimed")
    var claims: [AppGroupMailbox<String>.Claim] = []
    try Self.interfering(
      when: { $0.name == "openat" && $0.descriptor == claimed && $0.path != "." },
      action: {
        for name in try FileManager.default.contentsOfDirectory(atPath: claimedURL.path) {
          try FileManager.default.removeItem(at: claimedURL.appendingPathComponent(name))
        }
      }
    ) {
      claims = try mailbox.claimPending()
    }
    #expect(claims.map(\.message) == ["B"])
  }

  @Test func `An expired message another process removed first is skipped`() throws {
    let (container, clock, diagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let ours: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 10), clock: clock, diagnostics: diagnostics)
    try ours.enqueue("old")
    clock.advance(5)
    try ours.enqueue("new")
    clock.advance(6)
    let pending = ours.spool.directories.pending
    let pendingURL = container.area("pending")
    let oldName = try #require(container.names("pending").first)
    var claims: [AppGroupMailbox<String>.Claim] = []
    // Another process deletes it (that process holds the lock while it does; this one waits
    // for the lock, then finds the entry gone).
    try Self.interfering(
      when: { $0.name == "unlinkat" && $0.descriptor == pending },
      action: { try FileManager.default.removeItem(at: pendingURL.appendingPathComponent(oldName)) }
    ) {
      claims = try ours.claimPending()
    }
    #expect(claims.map(\.message) == ["new"])
    #expect(diagnostics.all == [])
  }

  @Test func `Two processes sweeping the same abandoned claim at once make one copy`() throws {
    let (container, clock, ourDiagnostics) = try TemporaryContainer.withClockAndDiagnostics()
    let theirDiagnostics = DiagnosticRecorder()
    let limits = AppGroupMailboxLimits(claimTimeout: 5)
    let ours: AppGroupMailbox<String> = try container.mailbox(
      limits: limits, clock: clock, diagnostics: ourDiagnostics)
    let theirs: AppGroupMailbox<String> = try container.mailbox(
      limits: limits, clock: clock, diagnostics: theirDiagnostics)
    let id = try ours.enqueue("A")
    _ = try ours.claimPending()
    clock.advance(6)
    // Recovery renames under the namespace lock: the other sweeper runs just before ours takes
    // it (after our listing), so both have seen the expired claim and race for it.
    try Self.interfering(
      when: { $0.name == "flock" && $0.flags == LOCK_EX },
      action: { try theirs.performMaintenance() }
    ) {
      try ours.performMaintenance()
    }
    #expect(container.pendingNames().map(\.id) == [id])
    #expect(container.names("claimed") == [])
    #expect(container.names("quarantine") == [])
    #expect(ourDiagnostics.all == [])
    #expect(theirDiagnostics.all == [.abandonedClaimRecovered])
    #expect(container.counters()?.depth == 1)
  }

  @Test func `discardOldest skips an oldest message that was claimed meanwhile`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let ours: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: clock)
    let theirs: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), clock: clock)
    try ours.enqueue("A")
    let b = try ours.enqueue("B")
    let pending = ours.spool.directories.pending
    let taken = Locked<[String]>([])
    try Self.interfering(
      when: { $0.name == "unlinkat" && $0.descriptor == pending },
      action: { taken.withLock { $0 = (try? theirs.claimPending(limit: 1).map(\.message)) ?? [] } }
    ) {
      try ours.enqueue("C")
    }
    #expect(taken.withLock { $0 } == ["A"])
    #expect(!container.pendingNames().map(\.id).contains(b))
    #expect(container.pendingNames().count == 1)
    #expect(container.claimedNames().count == 1)
    #expect(container.counters()?.depth == 2)
  }

  @Test func `discardOldest replaces one of two victims that was claimed meanwhile`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let ours: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 4), overflowPolicy: .discardOldest, clock: clock)
    let theirs: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 4), clock: clock)
    for message in ["A", "B", "C", "D"] { try ours.enqueue(message) }
    let pending = ours.spool.directories.pending
    let taken = Locked<[String]>([])
    // A batch of two needs two victims (A, B); A is claimed just before its unlink, so C goes.
    try Self.interfering(
      when: { $0.name == "unlinkat" && $0.descriptor == pending },
      action: { taken.withLock { $0 = (try? theirs.claimPending(limit: 1).map(\.message)) ?? [] } }
    ) {
      try ours.enqueue(contentsOf: ["E", "F"])
    }
    #expect(taken.withLock { $0 } == ["A"])
    #expect(container.claimedNames().count == 1)
    #expect(container.counters()?.depth == 4)
    #expect(try ours.claimPending().map(\.message) == ["D", "E", "F"])
  }

  @Test func `A temporary file removed by another sweeper is skipped`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date())
    let ours: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try container.plant("tmp", "1-1.tmp", Data("x".utf8))
    try container.plant("tmp", "1-2.tmp", Data("x".utf8))
    try container.setModified("tmp", "1-1.tmp", to: clock.now.addingTimeInterval(-1_000))
    try container.setModified("tmp", "1-2.tmp", to: clock.now.addingTimeInterval(-1_000))
    let tmp = ours.spool.directories.tmp
    let tmpURL = container.area("tmp")
    try Self.interfering(
      when: { $0.name == "unlinkat" && $0.descriptor == tmp },
      action: {
        for name in ["1-1.tmp", "1-2.tmp"] {
          try FileManager.default.removeItem(at: tmpURL.appendingPathComponent(name))
        }
      }
    ) {
      try ours.performMaintenance()
    }
    #expect(container.names("tmp") == [])
  }
}
