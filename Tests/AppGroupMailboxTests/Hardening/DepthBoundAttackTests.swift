import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Attacks on the depth bound (reviewer, branch adv): the counter in `state` must never sit
/// below the messages it counted, or enqueues pass `maxMessages`.
@Suite struct DepthBoundAttackTests {
  /// How many of `texts` an enqueue admits; `mailboxFull` refusals are counted out.
  static func admitted(_ texts: [String], into mailbox: AppGroupMailbox<String>) throws -> Int {
    var admitted = 0
    for text in texts {
      do {
        try mailbox.enqueue(text)
        admitted += 1
      } catch AppGroupMailboxError.mailboxFull {}
    }
    return admitted
  }

  @Test func `A requeue whose state write fails leaves no message the counter missed`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let limits = AppGroupMailboxLimits(maxMessages: 2)
    // A message a consumer of another payload type quarantines (malformed).
    let producer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self,
      limits: limits, messageType: "Job", clock: clock)
    try producer.enqueue(1)
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: limits, messageType: "Job", clock: clock)
    #expect(try mailbox.claimPending().isEmpty)
    let quarantined = try #require(try mailbox.inspector.entries(in: [.quarantined]).first)
    // The requeue's rename into pending/ succeeds; the write of the raised counter fails (EIO).
    let (thrown, unfired) = thrownError(under: [.init(call: "pwrite", errno: EIO)]) {
      _ = try mailbox.inspector.requeueQuarantined(quarantined.fileName)
    }
    #expect(unfired.isEmpty)
    #expect(thrown != nil)
    // Whatever the requeue reported, every message on disk must be counted: two more enqueues
    // through the library may not both be admitted under maxMessages 2.
    let pendingAfterRequeue = container.names("pending").count
    let admitted = try Self.admitted(["a", "b"], into: mailbox)
    #expect(pendingAfterRequeue + admitted <= 2, "pending: \(container.names("pending"))")
    #expect(container.names("pending").count <= 2)
  }
  @Test func `An enqueue whose link fallback fails to unlink the temporary file is not published`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), clock: clock)
    try mailbox.enqueue("before")
    // No RENAME_NOREPLACE (EINVAL): the move links tmp/x to pending/y, then the unlink of
    // tmp/x fails (EIO). The enqueue throws, so it must leave nothing published and counted.
    let (thrown, unfired) = thrownError(under: [
      .init(call: "renameat2", errno: EINVAL, count: Int.max),
      .init(call: "unlinkat", errno: EIO),
    ]) {
      try mailbox.enqueue("failed")
    }
    #expect(unfired.allSatisfy { $0.call == "renameat2" })
    #expect(thrown != nil)
    let delivered = try mailbox.claimPending().map(\.message)
    #expect(delivered == ["before"], "an enqueue that threw was delivered")
    // And whatever is on disk is counted: one more enqueue fills maxMessages 2, the next is
    // refused.
    for claim in try mailbox.claimPending() { try claim.release() }
    _ = try Self.admitted(["a", "b"], into: mailbox)
    #expect(container.names("pending").count + container.names("claimed").count <= 2)
  }
  @Test func `A keyed replace whose flush of pending fails keeps the message it replaced`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    _ = try mailbox.enqueue("old", key: "k", onConflict: .replace)
    // fsync of the new file, of its rewrite under the old id, then of pending/ (EIO) after the
    // exchange put the new file under the old name.
    let (thrown, unfired) = thrownError(under: [.init(call: "fsync", errno: EIO, skip: 2)]) {
      _ = try mailbox.enqueue("new", key: "k", onConflict: .replace)
    }
    #expect(unfired.isEmpty)
    #expect(thrown != nil)
    // The replace threw, so it did not happen: the old message is still there to deliver.
    let delivered = try mailbox.claimPending().map(\.message)
    #expect(delivered == ["old"])
  }
}

/// The crash torture checks the counters only after a fresh opener recounted them; a process
/// that opened the mailbox before the crash keeps using the line the crashed one left. That
/// line must never say fewer messages than the names hold (docs/FORMAT.md: "A crash can leave
/// it high, never low").
@Suite struct CrashLeftCounterTests {
  @Test(arguments: TortureOperationUnderTest.allCases)
  func `A crash after any system call leaves the depth counter at or above the names`(
    operation: TortureOperationUnderTest
  ) throws {
    for fallback in [false, true] {
      try crashes(operation, fallback: fallback)
    }
  }

  func crashes(_ operation: TortureOperationUnderTest, fallback: Bool) throws {
    let torture = CrashTortureTests()
    for k in 0..<200 {
      let container = try TemporaryContainer()
      try torture.prepare(operation, in: container)
      let result = try Processes.runWorker(
        ["torture", operation.rawValue, container.url.path, String(k)]
          + (fallback ? ["fallback"] : []), deadline: 60)
      let raw = try Data(contentsOf: container.area("state"))
      let mailbox: AppGroupMailbox<String> = try container.mailbox(limits: operation.limits)
      let spool = mailbox.spool
      let actual = try spool.withStateLock { try spool.recount(stored: $0).depth }
      // The quarantine case plants a torn file in pending/ by hand: never counted until a
      // recount, as the README says.
      let planted = operation == .quarantine ? 1 : 0
      if let stored = SpoolCounters(line: Array(raw)) {
        #expect(
          stored.depth + planted >= actual,
          "\(operation) fallback=\(fallback) k=\(k): state \(stored.depth), names \(actual)")
      }
      if result.status != 86 { return }
    }
  }

  /// Found by an adversarial review: `status` and `namespaces` counted a directory, FIFO or
  /// symbolic link under a message name as a message, so the depth they showed passed the
  /// bound that the depth counter (which leaves them out) kept.
  @Test func `What is not a regular file is not counted as a message by status or counts`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 2))
    try mailbox.enqueue(Data("1".utf8))
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    func pending(_ sequence: UInt64) -> PendingName {
      PendingName(
        key: MessageKey(micros: now, sequence: sequence, level: 5), id: UUID(), attempts: 0)
    }
    #expect(mkdir(namespace + "/pending/" + pending(90).fileName, 0o700) == 0)
    #expect(mkfifo(namespace + "/pending/" + pending(91).fileName, 0o600) == 0)
    #expect(symlink("/etc/passwd", namespace + "/pending/" + pending(92).fileName) == 0)
    let delayed = DelayedName(dueMicros: now + 300_000_000, message: pending(93)).fileName
    #expect(mkdir(namespace + "/delayed/" + delayed, 0o700) == 0)
    try mailbox.enqueue(Data("2".utf8))
    #expect(throws: AppGroupMailboxError.mailboxFull) { try mailbox.enqueue(Data("3".utf8)) }
    let status = try mailbox.inspector.status()
    #expect(status.pending == 2 && status.delayed == 0 && status.claimed == 0)
    #expect(status.depth == 2)
    let counts = try mailbox.inspector.counts()
    #expect(counts.pending == 2 && counts.delayed == 0 && counts.claimed == 0)
    #expect(counts.depth == 2)
    #expect(try mailbox.inspector.messageSummaries().count == 2)
    #expect(try mailbox.inspector.entries(in: [.pending, .delayed, .claimed]).count == 2)
  }
}
