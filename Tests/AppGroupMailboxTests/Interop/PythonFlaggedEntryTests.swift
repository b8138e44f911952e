import Foundation
import Testing

@testable import AppGroupMailbox

/// The Python peer's verdict on message files whose own inode flags refuse every rename
/// (chattr(1) `+i`, `+a`) is the Swift one's (``FlaggedEntryTests``): its claim, promotion and
/// recovery pass over them and leave them as they are, and an append-only `pending/` stays an
/// error (exit 74).
@Suite(
  .enabled(if: isRoot || isCI, "needs root for chattr"),
  .enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonFlaggedEntryTests {
  /// The path and bytes of the only entry of `area` (``FlaggedEntryTests/onlyEntry(_:_:)``).
  private static func onlyEntry(_ container: TemporaryContainer, _ area: String) throws -> (
    path: String, bytes: Data
  ) {
    try FlaggedEntryTests.onlyEntry(container, area)
  }

  @Test(arguments: InodeFlag.allCases)
  func `The Python peer passes over the same flagged files, and delivers them when they are not`(
    flag: InodeFlag
  ) throws {
    let container = try TemporaryContainer()
    // The Swift side's clock stands still a second in the past, so it never sees the 1 ms
    // lease or delay run out; the Python drain, on the system clock, finds both run out.
    let clock = FakeClock(start: Date().addingTimeInterval(-1))
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 0.001), clock: clock)
    var stuck: [(path: String, bytes: Data)] = []
    defer { for entry in stuck { InodeFlag.clearAll(entry.path, container) } }
    try mailbox.enqueue("F")
    #expect(try mailbox.claimPending().map(\.message) == ["F"])
    stuck.append(try Self.onlyEntry(container, "claimed"))
    try flag.set(stuck[0].path)
    try mailbox.enqueue("A")
    stuck.append(try Self.onlyEntry(container, "pending"))
    try flag.set(stuck[1].path)
    try mailbox.enqueue("B")
    try mailbox.enqueue("D", delay: 0.001)
    stuck.append(try Self.onlyEntry(container, "delayed"))
    try flag.set(stuck[2].path)
    let first = try PythonSpool.start("drain", container).finish()
    #expect(first.status == 0, "stderr: \(first.stderr)")
    #expect(try PythonSpool.delivered(first).map(\.payload) == ["\"B\""])
    for entry in stuck {
      #expect(FlaggedEntryTests.unchanged(entry.path, entry.bytes))
    }
    #expect(container.names("quarantine").isEmpty)
    // A refusal by the area itself is the error it was: nothing passed over, exit 74.
    try mailbox.enqueue("E")
    let pending = container.area("pending").path
    try InodeFlag.appendOnly.set(pending)
    defer { InodeFlag.clearAll(pending, container) }
    let refused = try PythonSpool.start("drain", container).finish()
    try InodeFlag.appendOnly.set(pending, false)
    #expect(refused.status == 74, "stderr: \(refused.stderr)")
    #expect(try PythonSpool.delivered(refused).isEmpty)
    for entry in stuck {
      try flag.set(entry.path, false)
    }
    let second = try PythonSpool.start("drain", container).finish()
    #expect(second.status == 0, "stderr: \(second.stderr)")
    // Each once (the drain claims what was pending before it promotes D).
    #expect(
      try PythonSpool.delivered(second).map(\.payload).sorted() == [
        "\"A\"", "\"D\"", "\"E\"", "\"F\"",
      ], "\(second.stdout)")
    #expect(container.names("quarantine").isEmpty)
  }

  @Test(arguments: InodeFlag.allCases)
  func `The Python peer's discard-oldest evicts the next message when the oldest is flagged`(
    flag: InodeFlag
  ) throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 2), overflowPolicy: .discardOldest)
    try mailbox.enqueue("A")
    let stuck = try Self.onlyEntry(container, "pending")
    defer { InodeFlag.clearAll(stuck.path, container) }
    try mailbox.enqueue("B")
    try flag.set(stuck.path)
    _ = try PythonSpool.run("enqueue", container, stdin: Data(#""C""#.utf8))
    #expect(FlaggedEntryTests.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("pending").count == 2)
    try flag.set(stuck.path, false)
    #expect(try mailbox.claimPending().map(\.message) == ["A", "C"])
  }

  @Test(arguments: InodeFlag.allCases)
  func `The Python peer passes over a flagged due message whose copy is already pending`(
    flag: InodeFlag
  ) throws {
    let container = try TemporaryContainer()
    // A second in the past: the message is due for the Python drain, on the system clock.
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: FakeClock(start: Date().addingTimeInterval(-1)))
    try mailbox.enqueue("D", delay: 0.001)
    let stuck = try Self.onlyEntry(container, "delayed")
    try FlaggedEntryTests.plantPendingCopy(of: stuck.path, stuck.bytes, in: container)
    try flag.set(stuck.path)
    defer { InodeFlag.clearAll(stuck.path, container) }
    let drained = try PythonSpool.start("drain", container).finish()
    #expect(drained.status == 0, "stderr: \(drained.stderr)")
    #expect(try PythonSpool.delivered(drained).map(\.payload) == ["\"D\""])
    #expect(FlaggedEntryTests.unchanged(stuck.path, stuck.bytes))
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `The Python peer's discard-oldest evicts nothing when flagged messages leave too few`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 10), overflowPolicy: .discardOldest)
    for message in ["A", "B", "C", "D"] { try mailbox.enqueue(message) }
    let lowered = try Mailboxctl.run(["config"] + container.arguments() + ["--max-messages", "2"])
    #expect(lowered.status == 0, "\(lowered.stderr)")
    // Names sort by their time, so the last two are C and D: three slots are needed, two free.
    let flagged = container.names("pending").sorted().suffix(2).map {
      container.area("pending").appendingPathComponent($0).path
    }
    defer { for path in flagged { InodeFlag.clearAll(path, container) } }
    for path in flagged { try InodeFlag.immutable.set(path) }
    let refused = try PythonSpool.start("enqueue", container, stdin: Data(#""E""#.utf8)).finish()
    #expect(refused.status == 75, "stderr: \(refused.stderr)")
    for path in flagged { try InodeFlag.immutable.set(path, false) }
    #expect(try mailbox.claimPending().map(\.message) == ["A", "B", "C", "D"])
  }
}
