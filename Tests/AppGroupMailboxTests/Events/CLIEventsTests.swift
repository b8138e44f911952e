import AppGroupMailbox
import Foundation
import Glibc
import Testing

/// `mailboxctl events` as a real process following changes this test process makes with the
/// library: the order, ids, counts and reasons of what it prints, and how it ends.
@Suite struct CLIEventsTests {
  /// The deadline for the last event to show up after the change that caused it, in seconds
  /// (500 ms, or `AGM_WAKE_DEADLINE_MS`). A correctness bound, not a speed target.
  static var deadline: TimeInterval { Double(WatchSupport.wakeDeadlineMicros) / 1_000_000 }

  /// Starts `mailboxctl events` (with `options`) on the container's mailbox and waits until it
  /// is armed.
  static func startEvents(_ container: TemporaryContainer, _ options: [String] = []) throws
    -> StreamingProcess
  {
    let events = try Mailboxctl.start(["events"] + container.arguments() + options)
    #expect(waitUntil(deadline: 30) { events.stderr.contains("events: following") })
    return events
  }

  /// Waits until `process` printed `count` lines, within ``deadline`` of now.
  static func waitForLines(_ process: StreamingProcess, _ count: Int) -> Bool {
    waitUntil(deadline: deadline) { process.stdout.split(separator: "\n").count >= count }
  }

  /// Waits for `count` lines within ``deadline``, stops `process` with `signal`, expects exit
  /// status 0 and returns the lines.
  static func stop(_ process: StreamingProcess, after count: Int, with signal: Int32) throws
    -> [[String: Any]]
  {
    #expect(waitForLines(process, count))
    process.signal(signal)
    let finished = try process.finish()
    #expect(finished.status == 0)
    return try jsonLines(finished.stdout)
  }

  @Test
  func
    `Another process sees one message enqueued, claimed, released, claimed and acknowledged in order`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let events = try Self.startEvents(container)
    let id = try mailbox.enqueue(Data(#"{"job":1}"#.utf8)).id
    try #require(try mailbox.claimPending(limit: 1).first).release()
    try #require(try mailbox.claimPending(limit: 1).first).acknowledge()
    let lines = try Self.stop(events, after: 5, with: SIGINT)
    #expect(
      lines.map { $0["event"] as? String }
        == ["enqueued", "claimed", "released", "claimed", "acknowledged"])
    #expect(
      lines.map { $0["id"] as? String } == Array(repeating: id.uuidString.lowercased(), count: 5))
    #expect(lines.map { $0["deliveryCount"] as? Int } == [0, 1, 1, 2, 2])
    #expect(lines.allSatisfy { $0["reason"] is NSNull && $0["dueAt"] is NSNull })
    #expect(!lines.contains { $0.values.contains { "\($0)".contains("job") } })
  }

  @Test
  func `Another process sees a dead letter and a malformed message quarantined with their reasons`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxDeliveryAttempts: 1))
    let events = try Self.startEvents(container)
    let dead = try mailbox.enqueue(Data("1".utf8)).id
    try #require(try mailbox.claimPending(limit: 1).first).release()
    #expect(try mailbox.claimPending(limit: 1).isEmpty)
    // A malformed message published as a producer would: written to tmp/, renamed to pending/.
    let malformed = UUID()
    let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs")
    let temporary = namespace.appendingPathComponent("tmp/planted.tmp")
    try Data("not an envelope".utf8).write(to: temporary)
    let now = String(WatchSupport.nowMicros())
    let name =
      String(repeating: "0", count: 16 - now.count) + now
      + "-00000000000000000099-\(malformed.uuidString.lowercased())-0.msg"
    #expect(rename(temporary.path, namespace.appendingPathComponent("pending/" + name).path) == 0)
    #expect(try mailbox.claimPending(limit: 1).isEmpty)
    let lines = try Self.stop(events, after: 7, with: SIGTERM)
    #expect(
      lines.map { $0["event"] as? String }
        == [
          "enqueued", "claimed", "released", "deadLettered", "enqueued", "claimed", "quarantined",
        ])
    let ids = [dead, dead, dead, dead, malformed, malformed, malformed]
    #expect(lines.map { $0["id"] as? String } == ids.map { $0.uuidString.lowercased() })
    #expect(
      lines.map { $0["reason"] as? String }
        == [nil, nil, nil, "deadletter", nil, nil, "malformed"])
    #expect(lines.map { $0["deliveryCount"] as? Int } == [0, 1, 1, nil, 0, 1, nil])
  }

  @Test func `events --count N exits 0 by itself after N lines, printing no more`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let events = try Self.startEvents(container, ["--count", "2"])
    let id = try mailbox.enqueue(Data("1".utf8)).id
    try #require(try mailbox.claimPending(limit: 1).first).release()
    // Exits on its own: no signal is sent (a hang fails the deadline, not the suite).
    let finished = try events.finish(deadline: 30)
    #expect(finished.status == 0)
    let lines = try jsonLines(finished.stdout)
    #expect(lines.map { $0["event"] as? String } == ["enqueued", "claimed"])
    #expect(lines.allSatisfy { $0["id"] as? String == id.uuidString.lowercased() })
  }

  @Test func `events --timeout exits 0 when the time is up, and refuses a time that is not one`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let events = try Self.startEvents(container, ["--timeout", "0.5"])
    let finished = try events.finish(deadline: 30)
    #expect(finished.status == 0)
    #expect(finished.stdout.isEmpty)
    for bad in [["--timeout", "0"], ["--timeout", "soon"], ["--count", "0"]] {
      let refused = try Mailboxctl.run(["events"] + container.arguments() + bad)
      #expect(refused.status == 64)
      #expect(refused.stderr.hasPrefix("mailboxctl: error: events: \(bad[0]) needs"))
    }
  }

  @Test func `events exits 66 when the mailbox directory is removed`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let events = try Self.startEvents(container)
    try FileManager.default.removeItem(at: container.url.appendingPathComponent("AppGroupMailbox"))
    let finished = try events.finish()
    #expect(finished.status == 66)
    #expect(
      finished.stderr.hasSuffix(
        "mailboxctl: error: events: the mailbox directory was deleted, moved or replaced while "
          + "the command ran\n"))
  }

  @Test func `events prints its help and exits 0`() throws {
    let finished = try Mailboxctl.run(["events", "--help"])
    #expect(finished.status == 0)
    #expect(finished.stdout.hasPrefix("usage: mailboxctl events [options]\n"))
    #expect(finished.stdout.contains("JSON Lines"))
  }
}
