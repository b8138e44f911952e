import Foundation
import Testing

@testable import AppGroupMailbox

/// Crashes each operation after every mutating system call in turn (a child process armed with
/// the debug-only `CrashPoint`), then checks in a fresh mailbox that nothing was lost, nothing
/// partial or duplicated is delivered, leftovers are swept and the mailbox keeps working.
@Suite struct CrashTortureTests {
  typealias Operation = TortureOperationUnderTest

  @Test(arguments: Operation.allCases)
  func `A crash after any system call of an operation loses nothing and delivers nothing twice`(
    operation: Operation
  ) throws {
    try torture(operation, fallback: false)
  }

  @Test(arguments: Operation.allCases.filter(\.movesByLink))
  func
    `A crash in the link-then-unlink fallback of a move loses nothing and delivers nothing twice`(
      operation: Operation
    ) throws
  {
    try torture(operation, fallback: true)
  }

  /// Runs `operation` in a child crashed after its k-th mutating system call, for every k until
  /// it completes; with `fallback`, renameat2(2) fails with EINVAL (fault injection) so every
  /// move links then unlinks.
  func torture(_ operation: Operation, fallback: Bool) throws {
    var crashes = 0
    for k in 0..<200 {
      let container = try TemporaryContainer()
      try prepare(operation, in: container)
      let result = try Processes.runWorker(
        ["torture", operation.rawValue, container.url.path, String(k)]
          + (fallback ? ["fallback"] : []), deadline: 60)
      let crashed = result.status == 86
      #expect(
        crashed || (result.status == 0 && result.lines == ["done"]), "k=\(k) \(result.stderr)")
      try check(operation, in: container, crashedAt: crashed ? k : nil, fallback: fallback)
      if !crashed {
        #expect(crashes > 0, "the operation made no mutating system call")
        return
      }
      crashes += 1
    }
    Issue.record("\(operation) never completed within 200 mutating system calls")
  }

  /// The state before the child runs: A then B pending; the recovery case has A claimed under
  /// an expired lease; the quarantine case has an undecodable file in front of both.
  func prepare(_ operation: Operation, in container: TemporaryContainer) throws {
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: operation.limits, overflowPolicy: operation.overflowPolicy)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    switch operation {
    case .recovery:
      let past: AppGroupMailbox<String> = try container.mailbox(
        limits: operation.limits, clock: FakeClock(start: Date().addingTimeInterval(-3_600)))
      #expect(try past.claimPending(limit: 1).map(\.message) == ["A"])
    case .quarantine:
      let key = MessageKey(micros: MailboxClock.system.nowMicros() - 3_600_000_000, sequence: 0)
      let name = PendingName(key: key, id: UUID(), attempts: 0).fileName
      try Data("{\"format\":1,\n{torn".utf8).write(
        to: container.area("pending").appendingPathComponent(name))
    case .promotion:
      // D waits in delayed/, due an hour ago (enqueued by a clock an hour behind).
      let past: AppGroupMailbox<String> = try container.mailbox(
        limits: operation.limits, clock: FakeClock(start: Date().addingTimeInterval(-3_600)))
      try past.enqueue("D", delay: 1)
    case .requeue, .purge:
      let id = UUID()
      let name = QuarantineName(
        micros: MailboxClock.system.nowMicros(), reason: .malformed, id: id, nonce: 1)
      try messageFile("Q", id: id, enqueuedAt: MailboxClock.system.nowMicros()).write(
        to: container.area("quarantine").appendingPathComponent(name.fileName))
    default: break
    }
  }

  /// What must be there after the child ended at `crashedAt` (nil: it completed): `required`
  /// exactly once, `optional` at most once, nothing else; no partial message; no leftovers.
  func check(
    _ operation: Operation, in container: TemporaryContainer, crashedAt: Int?, fallback: Bool
  ) throws {
    let diagnostics = DiagnosticRecorder()
    // An hour later: every lease (60 s) ran out and every temporary file (15 min) is stale.
    let later = FakeClock(start: Date().addingTimeInterval(3_600))
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: operation.limits, overflowPolicy: operation.overflowPolicy, clock: later,
      diagnostics: diagnostics)
    try mailbox.performMaintenance()
    if operation == .enqueueWithID {
      // Re-running the interrupted import must not duplicate it.
      try mailbox.enqueue("C", id: TortureOperation.importedID)
    }
    let claims = try mailbox.claimPending()
    let delivered = claims.map(\.message)
    let (required, optional) = operation.expected(completed: crashedAt == nil)
    let context = Comment(rawValue: "\(operation) k=\(crashedAt.map(String.init) ?? "done")")
    for message in required {
      #expect(delivered.filter { $0 == message }.count == 1, context)
    }
    for message in optional {
      #expect(delivered.filter { $0 == message }.count <= 1, context)
    }
    #expect(Set(delivered).isSubset(of: Set(required + optional)), context)
    #expect(delivered.count <= operation.limits.maxMessages, context)
    #expect(Set(claims.map(\.id)).count == claims.count, context)
    let planted = [.quarantine, .requeue, .purge].contains(operation) ? 1 : 0
    #expect(
      diagnostics.count(.malformedMessageQuarantined) <= (operation == .quarantine ? 1 : 0), context
    )
    // A requeue (or quarantine) that linked its file and died before the unlink leaves two
    // links, one in pending/ or claimed/: that name is quarantined as a copy once its grace
    // ends (never delivered twice), so quarantine may hold the file twice.
    let extra = fallback && [.requeue, .quarantine].contains(operation) ? 1 : 0
    #expect(container.names("quarantine").count <= planted + extra, context)
    for claim in claims { try claim.acknowledge() }
    #expect(container.names("tmp") == [], context)
    #expect(container.names("pending") == [], context)
    #expect(container.names("claimed") == [], context)
    #expect(container.names("delayed") == [], context)
    // Still works, and the counters agree with the names.
    try mailbox.enqueue("Z")
    #expect(try mailbox.claimPending().map(\.message) == ["Z"], context)
    try mailbox.performMaintenance()
    let state = try Data(contentsOf: container.area("state"))
    #expect(SpoolCounters(line: Array(state))?.depth == 1, context)
  }
}

/// The worker's operations, mirrored here with what each must leave behind.
enum TortureOperationUnderTest: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case enqueue, enqueueWithID, claim, acknowledge, release, releaseWithDelay, renew, recovery,
    quarantine, discardOldest, promotion, batchEnqueue, requeue, purge

  var testDescription: String { rawValue }

  /// Whether the operation moves a file with renameat2(2) `RENAME_NOREPLACE`, whose fallback
  /// links then unlinks (claims and renewals fall back to renameat(2), atomic).
  var movesByLink: Bool {
    [
      .enqueue, .enqueueWithID, .release, .releaseWithDelay, .recovery, .quarantine, .promotion,
      .batchEnqueue, .requeue,
    ].contains(self)
  }

  var limits: AppGroupMailboxLimits {
    AppGroupMailboxLimits(
      maxMessages: self == .discardOldest ? 2 : 1_000, messageLifetime: 86_400 * 3_650,
      claimTimeout: 60)
  }

  var overflowPolicy: AppGroupMailboxOverflowPolicy {
    self == .discardOldest ? .discardOldest : .rejectNewest
  }

  /// Messages that must be delivered exactly once, and those that may be delivered at most once.
  func expected(completed: Bool) -> (required: [String], optional: [String]) {
    switch self {
    case .enqueue: completed ? (["A", "B", "C"], []) : (["A", "B"], ["C"])
    case .enqueueWithID: (["A", "B", "C"], [])
    case .acknowledge: completed ? (["B"], []) : (["B"], ["A"])
    case .discardOldest: completed ? (["B", "C"], []) : (["B"], ["A", "C"])
    case .claim, .release, .releaseWithDelay, .renew, .recovery, .quarantine, .purge:
      (["A", "B"], [])
    case .promotion: (["A", "B", "D"], [])
    case .batchEnqueue: completed ? (["A", "B", "C", "E"], []) : (["A", "B"], ["C", "E"])
    case .requeue: completed ? (["A", "B", "Q"], []) : (["A", "B"], ["Q"])
    }
  }
}

enum TortureOperation {
  static let importedID = UUID(uuidString: "00000000-0000-4000-8000-0000000000c0")!
}
