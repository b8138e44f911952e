import Foundation
import Testing

@testable import AppGroupMailbox

/// The Python implementation follows the mailbox's stored settings for every bound, whatever
/// limits its opener was given: they "apply to every opener" (docs/FORMAT.md, "The settings
/// file"). Each test passes the Python side a limit that contradicts the stored one.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonStoredSettingsTests {
  @Test func `A Python consumer reads a message up to the stored payload limit, not its own`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 200_000))
    let big = "\"" + String(repeating: "a", count: 100_000) + "\""
    let id = try mailbox.enqueue(Data(big.utf8)).id
    let finished = try PythonSpool.run("drain", container, ["--max-payload-bytes", "65536"])
    let drained = try PythonSpool.delivered(finished)
    #expect(drained.map(\.id) == [id.uuidString.lowercased()])
    #expect(drained.map(\.payload.utf8.count) == [100_002])
    #expect(
      finished.stderr
        == "note: --max-payload-bytes ignored: the mailbox's stored settings apply\n")
    #expect(container.names("quarantine") == [])
    try container.expectDepth(0)
  }

  @Test func `A Python consumer expires by the stored lifetime, not its own`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(messageLifetime: 7 * 86_400))
    // Two days ago, in whole seconds: inside the stored seven days, past the opener's one day.
    let twoDaysAgo = Date(
      timeIntervalSince1970: (Date().timeIntervalSince1970 - 2 * 86_400).rounded())
    let id = try mailbox.enqueue(Data("{}".utf8), enqueuedAt: twoDaysAgo).id
    let drained = try PythonSpool.delivered(
      PythonSpool.run("drain", container, ["--lifetime", "86400"]))
    #expect(drained.map(\.id) == [id.uuidString.lowercased()])
    #expect(drained.map(\.enqueuedAt) == [Int64(twoDaysAgo.timeIntervalSince1970) * 1_000_000])
    try container.expectDepth(0)
  }

  @Test func `A Python producer refuses a message over the stored payload limit, not its own`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 1_000))
    let big = "\"" + String(repeating: "a", count: 5_000) + "\""
    let refused = try PythonSpool.start(
      "enqueue", container, ["--max-payload-bytes", "100000"], stdin: Data(big.utf8)
    ).finish()
    #expect(refused.status == 65, "stderr: \(refused.stderr)")
    #expect(refused.lines == ["too-large"])
    #expect(container.names("pending") == [] && container.names("tmp") == [])
    // A message within the stored limit goes through with the same options.
    let small = "\"" + String(repeating: "a", count: 500) + "\""
    let published = try PythonSpool.enqueue(
      [small], into: container, ["--max-payload-bytes", "100000"])
    #expect(published.map(\.outcome) == ["published"])
    let claims = try mailbox.claimPending()
    #expect(claims.map { $0.id.uuidString.lowercased() } == published.map(\.id))
    #expect(claims.map(\.payload.count) == [502])
    #expect(container.names("quarantine") == [])
  }

  @Test func `A Python consumer dead-letters at the stored maxDeliveryAttempts, not its own`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxDeliveryAttempts: 1))
    let id = try mailbox.enqueue(Data("{}".utf8)).id
    try #require(try mailbox.claimPending().first).release()  // its one delivery failed
    let drained = try PythonSpool.delivered(
      PythonSpool.run("drain", container, ["--max-attempts", "5"]))
    #expect(drained == [])
    #expect(container.quarantined().map(\.reason.rawValue) == ["deadletter"])
    #expect(container.quarantined().map(\.id) == [id])
    #expect(container.names("pending") == [])
  }

  @Test func `A Python consumer deletes rather than quarantines at a stored bound of 0`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(maxQuarantinedFiles: 0))
    try container.plant("pending", "notes.txt", Array("not a message".utf8))
    let drained = try PythonSpool.delivered(
      PythonSpool.run("drain", container, ["--max-quarantined", "20"]))
    #expect(drained == [])
    #expect(container.names("quarantine") == [] && container.names("pending") == [])
  }

  @Test func `A running Python consumer applies a changed lifetime from its next claim`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(messageLifetime: 7 * 86_400))
    let done = container.url.appendingPathComponent("done").path
    let consumer = try PythonSpool.start("drain", container, ["--until-file", done])
    let first = try mailbox.enqueue(Data("1".utf8)).id
    // The consumer runs and has read the settings once it took the first message.
    #expect(try waitUntil { try mailbox.inspector.status().pending == 0 })
    let changed = try mailbox.updateSettings { $0.messageLifetime = 3_600 }
    #expect(changed.messageLifetime == 3_600)
    // Two hours old: inside the lifetime the consumer first read, past the stored one now.
    let old = UUID()
    let micros = (Int64(Date().timeIntervalSince1970) - 7_200) * 1_000_000
    try container.plant(
      "pending", pendingName(micros: micros, sequence: 900, id: old),
      envelope(id: old, micros: micros, text: "old"))
    let fresh = try mailbox.enqueue(Data("2".utf8)).id
    #expect(
      waitUntil { container.names("pending").isEmpty && container.names("claimed").isEmpty })
    #expect(FileManager.default.createFile(atPath: done, contents: nil))
    let finished = try consumer.finish()
    #expect(finished.status == 0, "stderr: \(finished.stderr)")
    #expect(
      try PythonSpool.delivered(finished).map(\.id)
        == [first, fresh].map { $0.uuidString.lowercased() })
    #expect(container.names("quarantine") == [])
  }

  @Test func `A Python opener refuses a settings format newer than it reads`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let settings = container.url.appendingPathComponent("AppGroupMailbox/jobs/settings")
    let text = try String(contentsOf: settings, encoding: .utf8)
    try Data(text.replacingOccurrences(of: "\"format\":1", with: "\"format\":3").utf8)
      .write(to: settings)
    for command in ["drain", "enqueue"] {
      let refused = try PythonSpool.start(command, container, stdin: Data("2".utf8)).finish()
      #expect(refused.status == 69, "\(command): \(refused.stderr)")
      #expect(refused.stderr.contains("settings format 3"), "\(command): \(refused.stderr)")
      #expect(refused.stdout == "")
    }
    #expect(container.names("pending").count == 1 && container.names("claimed") == [])
  }

  @Test func `A namespace a Python opener creates stores its settings, which then apply to Swift`()
    throws
  {
    let container = try TemporaryContainer()
    let produced = try PythonSpool.enqueue(
      ["1"], into: container,
      [
        "--max-messages", "7", "--max-payload-bytes", "1000", "--lifetime", "3600",
        "--max-attempts", "3",
      ])
    #expect(produced.map(\.outcome) == ["published"])
    let mailbox = try container.rawMailbox()
    let expected = AppGroupMailboxSettings(
      limits: .init(
        maxMessages: 7, maxPayloadBytes: 1_000, messageLifetime: 3_600, maxDeliveryAttempts: 3))
    #expect(mailbox.settings == expected)
    let stored = try Data(
      contentsOf: container.url.appendingPathComponent("AppGroupMailbox/jobs/settings"))
    #expect(
      String(decoding: stored, as: UTF8.self)
        == String(decoding: SettingsText.encode(expected), as: UTF8.self))
  }
}

/// A lifetime under 1 µs is refused by both sides (found by an adversarial session: the Python
/// side read and wrote 0.0000005 s, which the library refuses, and its consumer then deleted
/// every message as expired while every Swift opener exited 69).
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonLifetimeResolutionTests {
  @Test func `A Python opener refuses a stored lifetime under a microsecond and deletes nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let settings = container.url.appendingPathComponent("AppGroupMailbox/jobs/settings")
    let text = try String(contentsOf: settings, encoding: .utf8)
    try Data(
      text.replacingOccurrences(of: "\"messageLifetime\":86400", with: "\"messageLifetime\":5e-7")
        .utf8
    ).write(to: settings)
    let refused = try PythonSpool.start("drain", container).finish()
    #expect(refused.status == 69, "\(refused.stderr)")
    #expect(refused.stderr.contains("'messageLifetime' is out of range"), "\(refused.stderr)")
    #expect(container.names("pending").count == 1)
  }

  @Test func `A Python creator does not store a lifetime under a microsecond`() throws {
    let container = try TemporaryContainer()
    let refused = try PythonSpool.start(
      "enqueue", container, ["--lifetime", "0.0000005"], stdin: Data("1".utf8)
    ).finish()
    #expect(refused.status == 2, "\(refused.stderr)")
    #expect(refused.stderr.contains("'messageLifetime' is out of range"), "\(refused.stderr)")
    #expect(
      !FileManager.default.fileExists(
        atPath: container.url.appendingPathComponent("AppGroupMailbox/jobs/settings").path))
  }
}
