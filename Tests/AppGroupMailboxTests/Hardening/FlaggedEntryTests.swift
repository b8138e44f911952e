import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// What makes a message file refuse every rename and unlink, for the tests of files a pass
/// must leave in place: chattr(1) `+i` (immutable) or `+a` (append-only), or a bind mount of a
/// copy onto the file (`EBUSY`; found by an adversarial session of stop 35: before, one such
/// file stopped every claim, enqueue and `maintain` with EBUSY). Each needs root
/// (`CAP_LINUX_IMMUTABLE`, `CAP_SYS_ADMIN`) and chattr a filesystem that keeps flags (ext4, not
/// tmpfs); a failure is a failed requirement, so under `CI=true` the tests fail rather than
/// skip.
enum InodeFlag: String, CaseIterable, Sendable {
  case immutable = "i"
  case appendOnly = "a"
  case mountedOn = "mount"

  /// Sets the flag on `path` (or clears it with `on` false); requires success. A mount binds a
  /// byte-equal copy (kept in the container's directory, outside the mailbox) onto the file.
  func set(_ path: String, _ on: Bool = true) throws {
    let result: Finished
    switch (self, on) {
    case (.mountedOn, true):
      let source = Self.mountSource(path)
      try Data(contentsOf: URL(fileURLWithPath: path)).write(to: URL(fileURLWithPath: source))
      result = try Processes.run("/bin/mount", ["--bind", source, path])
    case (.mountedOn, false):
      result = try Processes.run("/bin/umount", [path])
    default:
      result = try Processes.run("/usr/bin/chattr", [(on ? "+" : "-") + rawValue, path])
    }
    try #require(result.status == 0, "\(self) \(on) on \(path) failed: \(result.stderr)")
  }

  /// Where the copy bound onto the message file at `path` (`CONTAINER/AppGroupMailbox/NS/AREA/
  /// NAME`) is kept: `CONTAINER/bound-NAME`.
  static func mountSource(_ path: String) -> String {
    let file = URL(fileURLWithPath: path)
    var container = file
    for _ in 0..<4 { container.deleteLastPathComponent() }
    return container.appendingPathComponent("bound-" + file.lastPathComponent).path
  }

  /// Clears every flag of these tests from `path` if it is still there, and unmounts what is
  /// on it: the clean-up before the container (kept alive until then) removes its directory.
  static func clearAll(_ path: String, _ container: TemporaryContainer) {
    withExtendedLifetime(container) {
      unmount(path)
      _ = try? Processes.run("/usr/bin/chattr", ["-i", "-a", path])
    }
  }
}

/// A message file in `pending/`, `delayed/` or `claimed/` whose own inode flags refuse every
/// rename (immutable or append-only, chattr(1)): a claim, a promotion and a recovery pass over
/// it, leave it exactly as it is (no quarantine, no delete) and go on with the other entries;
/// before, the refused rename was thrown, so one such file made every claim, enqueue, `maintain`
/// and `drain` of the mailbox fail with `EPERM`. The same refusal caused by the area itself (an
/// append-only `pending/`) stays an error.
@Suite(.enabled(if: isRoot || isCI, "needs root for chattr and mount"))
struct FlaggedEntryTests {
  /// The path and bytes of the only entry of `area`.
  static func onlyEntry(_ container: TemporaryContainer, _ area: String) throws -> (
    path: String, bytes: Data
  ) {
    let names = container.names(area)
    try #require(names.count == 1, "\(area) holds \(names)")
    let path = container.area(area).appendingPathComponent(names[0]).path
    return (path, try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  /// Writes a byte-equal copy of the delayed entry at `path` under its pending name, as an
  /// interrupted link-then-unlink promotion leaves it.
  static func plantPendingCopy(of path: String, _ bytes: Data, in container: TemporaryContainer)
    throws
  {
    let delayed = try #require(DelayedName(parsing: URL(fileURLWithPath: path).lastPathComponent))
    try bytes.write(to: container.area("pending").appendingPathComponent(delayed.message.fileName))
  }

  /// Whether the entry at `path` is still there with exactly `bytes`.
  static func unchanged(_ path: String, _ bytes: Data) -> Bool {
    (try? Data(contentsOf: URL(fileURLWithPath: path))) == bytes
  }

  @Test(arguments: InodeFlag.allCases)
  func `A flagged oldest pending message is passed over, the others are claimed in order`(
    flag: InodeFlag
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("A")
    let stuck = try Self.onlyEntry(container, "pending")
    for message in ["B", "C"] {
      clock.advance(1)
      try mailbox.enqueue(message)
    }
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["B"])
    clock.advance(1)
    try mailbox.enqueue("D")
    #expect(try mailbox.claimPending().map(\.message) == ["C", "D"])
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("quarantine").isEmpty)
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try flag.set(stuck.path, false)
    clock.advance(Double(Spool.recheckInterval) / 1e6 + 1)
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
  }

  @Test(arguments: InodeFlag.allCases)
  func `A flagged due message in delayed/ is passed over, the others are promoted`(
    flag: InodeFlag
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("D", delay: 10)
    let stuck = try Self.onlyEntry(container, "delayed")
    clock.advance(1)
    try mailbox.enqueue("E", delay: 10)
    clock.advance(1)
    try mailbox.enqueue("F", delay: 100)
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(20)
    // The enqueue promotes (its sweep), then the claim and maintenance meet the file again.
    try mailbox.enqueue("G")
    #expect(try mailbox.claimPending().map(\.message) == ["E", "G"])
    try mailbox.performMaintenance()
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("delayed").count == 2)
    #expect(container.names("quarantine").isEmpty)
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    // The passed-over file is no due time: waiting code sleeps until F's, not at once for ever.
    let due = try #require(try mailbox.nextDueDate())
    #expect(abs(due.timeIntervalSince(clock.now) - 80) < 0.001)
    try flag.set(stuck.path, false)
    clock.advance(2)
    #expect(try mailbox.nextDueDate().map { $0 < clock.now } == true)
    #expect(try mailbox.claimPending().map(\.message) == ["D"])
  }

  @Test(arguments: InodeFlag.allCases)
  func `A flagged claim whose lease ran out is passed over, the others are recovered`(
    flag: InodeFlag
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 5), clock: clock, diagnostics: recorder)
    try mailbox.enqueue("F")
    let first = try #require(try mailbox.claimPending(limit: 1).first)
    #expect(first.message == "F")
    let stuck = try Self.onlyEntry(container, "claimed")
    clock.advance(1)
    try mailbox.enqueue("G")
    #expect(try mailbox.claimPending().map(\.message) == ["G"])
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(10)
    try mailbox.performMaintenance()
    try mailbox.enqueue("H")
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["G", "H"])
    #expect(again.map(\.deliveryCount) == [2, 1])
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("quarantine").isEmpty)
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try flag.set(stuck.path, false)
    clock.advance(1)
    try mailbox.performMaintenance()
    let last = try mailbox.claimPending()
    #expect(last.map(\.message) == ["F"])
    #expect(last.map(\.deliveryCount) == [2])
  }

  /// Found by an adversarial review (stop 35): an expired message with something mounted on
  /// it failed every claim with EBUSY from its unlink; immutable ones were passed over.
  @Test(arguments: InodeFlag.allCases)
  func `A flagged message past its lifetime is left in place, the others delivered`(
    flag: InodeFlag
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 5), clock: clock, diagnostics: recorder)
    try mailbox.enqueue("A")
    let stuck = try Self.onlyEntry(container, "pending")
    clock.advance(4)
    try mailbox.enqueue("B")
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(2)  // A is past its lifetime, B is not
    #expect(try mailbox.claimPending().map(\.message) == ["B"])
    try mailbox.performMaintenance()
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try flag.set(stuck.path, false)
    clock.advance(Double(Spool.recheckInterval) / 1e6 + 1)
    // Free again, it is removed as expired, never delivered.
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.names("pending").isEmpty)
  }

  @Test(arguments: InodeFlag.allCases)
  func `A flagged due message whose copy is already pending is passed over, the copy claimed`(
    flag: InodeFlag
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("D", delay: 10)
    let stuck = try Self.onlyEntry(container, "delayed")
    try Self.plantPendingCopy(of: stuck.path, stuck.bytes, in: container)
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(20)
    // The enqueue promotes (its sweep) and meets the copy: before, unlinking the flagged
    // duplicate failed every enqueue, claim and maintenance with EPERM.
    try mailbox.enqueue("G")
    #expect(try mailbox.claimPending().map(\.message) == ["D", "G"])
    try mailbox.performMaintenance()
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("quarantine").isEmpty)
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
  }

  @Test(arguments: InodeFlag.allCases)
  func `discardOldest evicts the next message when the oldest is flagged`(flag: InodeFlag)
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest, clock: clock,
      diagnostics: recorder)
    try mailbox.enqueue("A")
    let stuck = try Self.onlyEntry(container, "pending")
    clock.advance(1)
    try mailbox.enqueue("B")
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(1)
    try mailbox.enqueue("C")
    #expect(try mailbox.claimPending().map(\.message) == ["C"])
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try flag.set(stuck.path, false)
    clock.advance(Double(Spool.recheckInterval) / 1e6 + 1)
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
  }

  @Test func `An append-only pending/ directory is still an error, and nothing is passed over`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("H")
    clock.advance(1)
    try mailbox.enqueue("I")
    let pending = container.area("pending").path
    try InodeFlag.appendOnly.set(pending)
    defer { InodeFlag.clearAll(pending, container) }
    #expect(throws: AppGroupMailboxError.self) { try mailbox.claimPending() }
    #expect(container.names("pending").count == 2)
    #expect(recorder.count(.unsafeEntryLeftInPlace) == 0)
    try InodeFlag.appendOnly.set(pending, false)
    #expect(try mailbox.claimPending().map(\.message) == ["H", "I"])
  }

  @Test func `A holder's release of its own flagged claim is still an error`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("J")
    let claim = try #require(try mailbox.claimPending().first)
    let held = try Self.onlyEntry(container, "claimed")
    try InodeFlag.immutable.set(held.path)
    defer { InodeFlag.clearAll(held.path, container) }
    #expect(throws: AppGroupMailboxError.self) { try claim.release() }
    #expect(Self.unchanged(held.path, held.bytes))
    try InodeFlag.immutable.set(held.path, false)
    try claim.release()
    #expect(try mailbox.claimPending().map(\.message) == ["J"])
  }

  @Test(arguments: [(20, "renameat2"), (0, "unlinkat")])
  func `A holder's dead letter of its own flagged claim fails naming EPERM`(
    kept: Int, call: String
  ) throws {
    // With no quarantine kept the dead letter deletes: its unlink's refusal is named (not the
    // directory open tried after an EPERM, which said ENOTDIR).
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxQuarantinedFiles: kept))
    try mailbox.enqueue(Data(#""K""#.utf8))
    let claim = try #require(try mailbox.claimPending().first)
    let held = try Self.onlyEntry(container, "claimed")
    try InodeFlag.immutable.set(held.path)
    defer { InodeFlag.clearAll(held.path, container) }
    let error = #expect(throws: AppGroupMailboxError.self) { try claim.deadLetter() }
    guard case .ioFailure(let cause)? = error else {
      Issue.record("not an I/O failure: \(String(describing: error))")
      return
    }
    #expect(cause.operation == "dead-letter")
    #expect(cause.systemCall == call, "\(cause)")
    #expect(cause.errno == EPERM, "\(cause)")
    #expect(Self.unchanged(held.path, held.bytes))
  }

  @Test func `discardOldest evicts nothing when flagged messages leave too few to make room`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 3), overflowPolicy: .discardOldest, clock: clock,
      diagnostics: recorder)
    var flagged: [String] = []
    defer { for path in flagged { InodeFlag.clearAll(path, container) } }
    try mailbox.enqueue("A")
    for message in ["B", "C"] {
      clock.advance(1)
      let before = Set(container.names("pending"))
      try mailbox.enqueue(message)
      let name = try #require(Set(container.names("pending")).subtracting(before).first)
      flagged.append(container.area("pending").appendingPathComponent(name).path)
    }
    for path in flagged { try InodeFlag.immutable.set(path) }
    // Two slots are needed and only A can go: before, A was deleted and the batch refused.
    #expect(throws: AppGroupMailboxError.mailboxFull) {
      try mailbox.enqueue(contentsOf: ["D", "E"])
    }
    for path in flagged { try InodeFlag.immutable.set(path, false) }
    #expect(try mailbox.claimPending().map(\.message) == ["A", "B", "C"])
  }

  @Test func `A flagged message with a second link is passed over, never copied to quarantine`()
    throws
  {
    // The clock starts now: a hard link's age is measured from its inode's change time.
    let container = try TemporaryContainer()
    let (clock, recorder) = (FakeClock(start: Date()), DiagnosticRecorder())
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("L")
    let stuck = try Self.onlyEntry(container, "pending")
    let outside = container.url.appendingPathComponent("outside-link").path
    try #require(link(stuck.path, outside) == 0)
    try InodeFlag.immutable.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    clock.advance(Double(Spool.linkedEntryGrace) / 1e6 + 1)
    for _ in 0..<3 {
      #expect(try mailbox.claimPending().isEmpty)
      clock.advance(Double(Spool.recheckInterval) / 1e6 + 1)
    }
    #expect(container.names("quarantine").isEmpty)
    #expect(Self.unchanged(stuck.path, stuck.bytes))
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
  }
}
