import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A message file whose own flags refuse every rename and unlink (chattr(1) `+i`; not even root
/// may move it) is passed over wherever a pass meets it (a claim in `pending/`, a promotion from
/// `delayed/`, a recovery from `claimed/`): before, the refused rename was thrown, so one such
/// file made every claim, enqueue and `drain` of the mailbox fail with `EPERM`. A refusal by the
/// area itself (an immutable directory) and a holder's own release stay errors.
@Suite(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
struct ImmutableEntryTests {
  /// Makes `path` immutable (or mutable again with `on` false); requires success.
  private static func immutable(_ path: String, _ on: Bool = true) throws {
    let result = try Processes.run("/usr/bin/chattr", [on ? "+i" : "-i", path])
    try #require(result.status == 0, "chattr failed: \(result.stderr)")
  }

  /// Makes `path` mutable again if it is still there: the clean-up before the container
  /// (kept alive until then) removes its directory.
  private static func unlock(_ path: String, _ container: TemporaryContainer) {
    withExtendedLifetime(container) { _ = try? Processes.run("/usr/bin/chattr", ["-i", path]) }
  }

  /// The path of the only entry of `area`.
  private static func onlyEntry(_ container: TemporaryContainer, _ area: String) throws -> String {
    let names = container.names(area)
    try #require(names.count == 1, "\(area) holds \(names)")
    return container.area(area).appendingPathComponent(names[0]).path
  }

  @Test func `An immutable oldest pending message is passed over, and delivered once it is not`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("A")
    let stuck = try Self.onlyEntry(container, "pending")
    clock.advance(1)
    try mailbox.enqueue("B")
    try Self.immutable(stuck)
    defer { Self.unlock(stuck, container) }
    #expect(try mailbox.claimPending(limit: 1).map(\.message) == ["B"])
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try mailbox.enqueue("C")
    #expect(try mailbox.claimPending().map(\.message) == ["C"])
    try Self.immutable(stuck, false)
    clock.advance(Double(Spool.recheckInterval) / 1e6 + 1)
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
    #expect(container.quarantined().isEmpty)
  }

  @Test func `An immutable due message in delayed/ stops neither enqueues nor claims`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("D", delay: 10)
    let stuck = try Self.onlyEntry(container, "delayed")
    try Self.immutable(stuck)
    defer { Self.unlock(stuck, container) }
    clock.advance(20)
    try mailbox.enqueue("E")
    #expect(try mailbox.claimPending().map(\.message) == ["E"])
    try mailbox.performMaintenance()
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try Self.immutable(stuck, false)
    clock.advance(2)
    #expect(try mailbox.claimPending().map(\.message) == ["D"])
  }

  @Test func `An immutable claim whose lease ran out stops no claim, and is recovered later`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 5), clock: clock, diagnostics: recorder)
    try mailbox.enqueue("F")
    #expect(try mailbox.claimPending().map(\.message) == ["F"])
    let stuck = try Self.onlyEntry(container, "claimed")
    try Self.immutable(stuck)
    defer { Self.unlock(stuck, container) }
    clock.advance(10)
    try mailbox.enqueue("G")
    try mailbox.performMaintenance()
    #expect(try mailbox.claimPending().map(\.message) == ["G"])
    #expect(recorder.count(.unsafeEntryLeftInPlace) >= 1)
    try Self.immutable(stuck, false)
    try mailbox.performMaintenance()
    let again = try mailbox.claimPending()
    #expect(again.map(\.message) == ["F"])
    #expect(again.map(\.deliveryCount) == [2])
  }

  @Test func `A refusal by the area itself, or of the holder's own claim, is still an error`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("H")
    try mailbox.enqueue("I")
    let claim = try #require(try mailbox.claimPending(limit: 1).first)
    let held = try Self.onlyEntry(container, "claimed")
    try Self.immutable(held)
    defer { Self.unlock(held, container) }
    #expect(throws: AppGroupMailboxError.self) { try claim.release() }
    let pending = container.area("pending").path
    try Self.immutable(pending)
    defer { Self.unlock(pending, container) }
    #expect(throws: AppGroupMailboxError.self) { try mailbox.claimPending() }
    #expect(recorder.count(.unsafeEntryLeftInPlace) == 0)
    try Self.immutable(pending, false)
    #expect(try mailbox.claimPending().map(\.message) == ["I"])
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `The Python peer passes over the same immutable files, and delivers them when they are not`()
    throws
  {
    let container = try TemporaryContainer()
    // The system clock: the Python drain, started later, finds the 1 ms lease and delay run out.
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 0.001))
    // Each file is made immutable before the next operation of the Swift side, which would
    // recover or promote it (and passes over it once it is immutable).
    var paths: [String] = []
    defer { for path in paths { Self.unlock(path, container) } }
    try mailbox.enqueue("F")
    #expect(try mailbox.claimPending().map(\.message) == ["F"])
    paths.append(try Self.onlyEntry(container, "claimed"))
    try Self.immutable(paths[0])
    try mailbox.enqueue("A")
    paths.append(try Self.onlyEntry(container, "pending"))
    try Self.immutable(paths[1])
    try mailbox.enqueue("B")
    try mailbox.enqueue("D", delay: 0.001)
    paths.append(try Self.onlyEntry(container, "delayed"))
    try Self.immutable(paths[2])
    let first = try PythonSpool.start("drain", container).finish()
    #expect(first.status == 0, "stderr: \(first.stderr)")
    #expect(try PythonSpool.delivered(first).map(\.payload) == ["\"B\""])
    for path in paths {
      try Self.immutable(path, false)
    }
    let second = try PythonSpool.start("drain", container).finish()
    #expect(second.status == 0, "stderr: \(second.stderr)")
    #expect(try PythonSpool.delivered(second).map(\.payload) == ["\"F\"", "\"A\"", "\"D\""])
    #expect(container.names("quarantine").isEmpty)
  }
}
