import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 14, point 1: a mailbox keeps its own settings, and every opener follows them.
@Suite struct StoredSettingsTests {
  func settingsText(_ container: TemporaryContainer) throws -> String {
    try String(
      contentsOfFile: container.url.path + "/AppGroupMailbox/jobs/settings", encoding: .utf8)
  }

  @Test func `Creating a mailbox writes its settings file once, with exactly these values`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.mailbox(
      limits: .init(maxMessages: 7, maxPayloadBytes: 200_000, maxDeliveryAttempts: 3),
      overflowPolicy: .discardOldest)
    #expect(
      try settingsText(container)
        == "{\"format\":1,\"maxMessages\":7,\"maxPayloadBytes\":200000,"
        + "\"largestPayloadBytes\":200000,\"messageLifetime\":86400,\"maxQuarantinedFiles\":20,"
        + "\"maxDeliveryAttempts\":3,\"overflowPolicy\":\"discardOldest\",\"sharing\":\"private\"}\n"
    )
    let info = try FileManager.default.attributesOfItem(
      atPath: container.url.path + "/AppGroupMailbox/jobs/settings")
    #expect((info[.posixPermissions] as? Int) == 0o600)
  }

  @Test func `An opener with other limits follows the stored ones and is told once which differ`()
    throws
  {
    let container = try TemporaryContainer()
    let creator = try container.mailbox(limits: .init(maxMessages: 2, maxPayloadBytes: 200_000))
    let recorder = DiagnosticRecorder()
    let other = try container.mailbox(
      limits: .init(maxMessages: 50, claimTimeout: 5), overflowPolicy: .discardOldest,
      diagnostics: recorder)
    #expect(
      recorder.all == [
        .storedSettingsApplied(differingFields: [
          "maxMessages", "maxPayloadBytes", "overflowPolicy",
        ])
      ])
    #expect(other.limits == .init(maxMessages: 2, maxPayloadBytes: 200_000, claimTimeout: 5))
    try other.enqueue(String(repeating: "x", count: 100_000))
    try other.enqueue("b")
    #expect(throws: AppGroupMailboxError.mailboxFull) { try other.enqueue("c") }
    // The creator reads what the other opener was allowed to write (C27).
    let claims = try creator.claimPending()
    #expect(claims.map(\.message.count) == [100_000, 1])
    #expect(recorder.all.count == 1)
  }

  /// A hold is the mailbox's state, not something an opener passes: opening a held mailbox
  /// with its own settings reports no difference (found by a new-user trial: every opener of a
  /// held mailbox was told "held" differed).
  @Test func `Opening a held mailbox with its settings reports no difference`() throws {
    let container = try TemporaryContainer()
    let creator = try container.mailbox()
    try creator.pause()
    let recorder = DiagnosticRecorder()
    let opener = try container.mailbox(diagnostics: recorder)
    #expect(recorder.all.isEmpty)
    #expect(opener.isHeld)
  }

  @Test func `A changed setting applies at once to a mailbox already open in another process`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxMessages: 1))
    try raw.enqueue(Data("1".utf8))
    // A Swift producer process opening with maxMessages 100 follows the stored bound of 1.
    let go = container.url.appendingPathComponent("go").path
    #expect(FileManager.default.createFile(atPath: go, contents: nil))
    let before = try Processes.start(
      Processes.product("MailboxTestWorker"),
      ["enqueue-burst", container.url.path, "jobs", "5", "100", "reject", go]
    ).finish()
    #expect(before.stdout == "ok 0 full 5\n")
    let updated = try raw.updateSettings { $0.maxMessages = 4 }
    #expect(updated.maxMessages == 4)
    let after = try Processes.start(
      Processes.product("MailboxTestWorker"),
      ["enqueue-burst", container.url.path, "jobs", "5", "100", "reject", go]
    ).finish()
    #expect(after.stdout == "ok 3 full 2\n")
    #expect(try raw.inspector.status().depth == 4)
    #expect(raw.limits.maxMessages == 4)
  }

  @Test func `Lowering the payload limit never makes a stored message oversized`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxPayloadBytes: 200_000))
    let big = Data(("\"" + String(repeating: "y", count: 70_000) + "\"").utf8)
    try raw.enqueue(big)
    let consumer = try container.rawMailbox()
    try consumer.updateSettings { $0.maxPayloadBytes = 1_000 }
    #expect(throws: AppGroupMailboxError.payloadTooLarge(actualBytes: 70_106, maximumBytes: 1_000))
    {
      try raw.enqueue(big)
    }
    let claims = try consumer.claimPending()
    #expect(claims.map(\.payload) == [big])
    #expect(container.names("quarantine").isEmpty)
    #expect(consumer.settings.largestPayloadBytes == 200_000)
  }

  @Test func `A payload limit another opener changed applies to the next enqueue either way`()
    throws
  {
    let container = try TemporaryContainer()
    let producer = try container.rawMailbox(limits: .init(maxPayloadBytes: 1_000))
    let other = try container.rawMailbox()
    let big = Data(("\"" + String(repeating: "y", count: 2_000) + "\"").utf8)
    // Raised elsewhere: the producer's known limit refuses it, so it re-reads the settings.
    try other.updateSettings { $0.maxPayloadBytes = 10_000 }
    try producer.enqueue(big)
    // Lowered elsewhere after the producer last read them: the check under the namespace lock
    // (which re-reads changed settings) refuses it before it is published.
    try other.updateSettings { $0.maxPayloadBytes = 1_000 }
    #expect(throws: AppGroupMailboxError.payloadTooLarge(actualBytes: 2_106, maximumBytes: 1_000)) {
      try producer.enqueue(big)
    }
    #expect(container.names("tmp").isEmpty)
    #expect(try other.inspector.status().depth == 1)
    #expect(try other.claimPending().map(\.payload) == [big])
  }

  @Test func `The sharing mode cannot be changed and invalid values write nothing`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let before = try settingsText(container)
    #expect(throws: AppGroupMailboxError.invalidLimit("sharing")) {
      try raw.updateSettings { $0.permissions = .groupShared }
    }
    #expect(throws: AppGroupMailboxError.invalidLimit("maxMessages")) {
      try raw.updateSettings { $0.maxMessages = 0 }
    }
    #expect(try settingsText(container) == before)
  }

  /// A bound every reader of the file refuses (a whole number of 9 * 10^15 or more) was stored,
  /// after which no process could open the mailbox again (found by an adversarial review:
  /// `maxMessages = Int.max`).
  @Test func `A count bound too large for the settings file is refused before it is written`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let before = try settingsText(container)
    for change in [
      { (settings: inout AppGroupMailboxSettings) in settings.maxMessages = .max },
      { $0.maxMessages = 9_000_000_000_000_000 },
      { $0.maxQuarantinedFiles = 10_000_000_000_000_000 },
      { $0.maxDeliveryAttempts = .max },
    ] {
      #expect(throws: AppGroupMailboxError.self) { try raw.updateSettings(change) }
    }
    #expect(try settingsText(container) == before)
    let ceiling = AppGroupMailboxLimits.countCeiling
    try raw.updateSettings {
      $0.maxMessages = ceiling
      $0.maxQuarantinedFiles = ceiling
      $0.maxDeliveryAttempts = ceiling
    }
    let reopened = try AppGroupMailboxInspector(containerURL: container.url, namespace: "jobs")
    #expect(reopened.settings.maxMessages == ceiling)
    #expect(reopened.settings.maxQuarantinedFiles == ceiling)
    #expect(reopened.settings.maxDeliveryAttempts == ceiling)
    let fresh = try TemporaryContainer()
    #expect(throws: AppGroupMailboxError.invalidLimit("maxQuarantinedFiles")) {
      try fresh.rawMailbox(limits: .init(maxQuarantinedFiles: ceiling + 1))
    }
    #expect(!FileManager.default.fileExists(atPath: fresh.url.path + "/AppGroupMailbox"))
  }

  @Test func `A spool without a settings file gets one from its first writing opener only`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(limits: .init(maxMessages: 3))
    let file = container.url.path + "/AppGroupMailbox/jobs/settings"
    try FileManager.default.removeItem(atPath: file)
    let inspector = try AppGroupMailboxInspector(containerURL: container.url, namespace: "jobs")
    #expect(inspector.settings == AppGroupMailboxSettings())
    #expect(!FileManager.default.fileExists(atPath: file))
    let writer = try container.rawMailbox(limits: .init(maxMessages: 9))
    #expect(writer.settings.maxMessages == 9)
    #expect(FileManager.default.fileExists(atPath: file))
    #expect(inspector.settings.maxMessages == 9)
  }

  @Test func `A settings file of a newer format is refused, not guessed at`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    try Data("{\"format\":3,\"priorities\":true}\n".utf8).write(
      to: container.url.appendingPathComponent("AppGroupMailbox/jobs/settings"))
    #expect(throws: AppGroupMailboxError.invalidLimit("settings format 3")) {
      _ = try container.rawMailbox()
    }
  }
}

/// A change applies to the settings file as it is under the lock: a mailbox opened before a
/// newer format's file was written refuses to change it instead of writing its own older
/// values over it (found by an adversarial session: the format-3 file, held, was replaced by
/// a format-1 file that was not held, and a drain delivered from the held mailbox).
@Suite struct SettingsChangeRereadTests {
  @Test func `A change refuses a settings file of a newer format and leaves it as it is`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let path = container.url.appendingPathComponent("AppGroupMailbox/jobs/settings")
    let newer = Data(
      ("{\"format\":3,\"maxMessages\":100,\"maxPayloadBytes\":65536,\"messageLifetime\":86400,"
        + "\"maxQuarantinedFiles\":20,\"maxDeliveryAttempts\":null,"
        + "\"overflowPolicy\":\"rejectNewest\",\"sharing\":\"private\",\"held\":true}\n").utf8)
    // Written as another program would: a new file renamed over the old one.
    let staged = container.url.appendingPathComponent("AppGroupMailbox/jobs/tmp/newer")
    try newer.write(to: staged)
    #expect(rename(staged.path, path.path) == 0)
    #expect(throws: AppGroupMailboxError.invalidLimit("settings format 3")) {
      try mailbox.updateSettings { $0.maxMessages = 7 }
    }
    #expect(throws: AppGroupMailboxError.invalidLimit("settings format 3")) {
      try mailbox.pause()
    }
    #expect(try Data(contentsOf: path) == newer)
  }

  @Test func `A change made through another mailbox instance is kept by the next change`() throws {
    let container = try TemporaryContainer()
    let first = try container.rawMailbox()
    let second = try container.rawMailbox()
    _ = first.settings
    try second.pause()
    try second.updateSettings { $0.maxMessages = 9 }
    let updated = try first.updateSettings { $0.maxQuarantinedFiles = 3 }
    #expect(updated.maxMessages == 9)
    #expect(updated.maxQuarantinedFiles == 3)
    #expect(updated.isHeld)
  }
}

/// Members a newer writer added within the format (docs/FORMAT.md, "Readers ignore members
/// they do not know") were dropped by every change an older build made ('config', 'hold',
/// 'resume'), so the newer build's hints were lost each time an older one touched the mailbox.
@Suite struct SettingsOtherMembersTests {
  /// Renames `text` over the mailbox's settings file, as another program writes it.
  static func store(_ text: String, in container: TemporaryContainer) throws {
    let staged = container.url.appendingPathComponent("AppGroupMailbox/jobs/tmp/staged")
    try Data(text.utf8).write(to: staged)
    #expect(rename(staged.path, container.url.path + "/AppGroupMailbox/jobs/settings") == 0)
  }

  static func stored(_ container: TemporaryContainer) throws -> String {
    try String(
      contentsOfFile: container.url.path + "/AppGroupMailbox/jobs/settings", encoding: .utf8)
  }

  @Test func `A change writes back the members this build does not know, as they were`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let created = try Self.stored(container)
    // One member among the known ones, one after them with an escaped name and spaces.
    let others = #""hint":{"a":[1,"x"]},"z\u0041" : 2"#
    let known = String(created.dropLast(2))  // without "}\n"
    let text = known.replacingOccurrences(
      of: #""maxMessages":"#, with: #""hint":{"a":[1,"x"]},"maxMessages":"#)
    try Self.store(text + #", "z\u0041" : 2}"# + "\n", in: container)
    try mailbox.pause()
    let held = known.replacingOccurrences(of: #"{"format":1,"#, with: #"{"format":2,"#)
    #expect(try Self.stored(container) == held + #","held":true,"# + others + "}\n")
    try mailbox.resume()
    try mailbox.updateSettings { $0.maxQuarantinedFiles = 3 }
    let changed = known.replacingOccurrences(
      of: #""maxQuarantinedFiles":20,"#, with: #""maxQuarantinedFiles":3,"#)
    #expect(try Self.stored(container) == changed + "," + others + "}\n")
    #expect(try container.rawMailbox().settings.maxQuarantinedFiles == 3)
  }

  /// Found by a second review: a line break between the tokens of a kept member was kept too,
  /// and the file was no longer one line (docs/FORMAT.md).
  @Test func `A kept member stays on the file's one line`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let known = String(try Self.stored(container).dropLast(2))
    try Self.store(known + ",\"hint\" :\r\n{\"a\":\n1}}\n", in: container)
    try mailbox.updateSettings { $0.maxQuarantinedFiles = 3 }
    let changed = known.replacingOccurrences(
      of: #""maxQuarantinedFiles":20,"#, with: #""maxQuarantinedFiles":3,"#)
    #expect(try Self.stored(container) == changed + ",\"hint\" :  {\"a\": 1}}\n")
  }

  @Test func `A change that would make the file larger than 4096 bytes writes nothing`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let known = String(try Self.stored(container).dropLast(2))
    // 4,096 bytes with its newline; holding adds `,"held":true`.
    let filler = String(repeating: "x", count: 4096 - known.count - #","pad":""}"#.count - 1)
    let text = known + #","pad":""# + filler + "\"}\n"
    #expect(text.utf8.count == 4096)
    try Self.store(text, in: container)
    #expect(throws: AppGroupMailboxError.invalidLimit("settings would be larger than 4096 bytes")) {
      try mailbox.pause()
    }
    #expect(try Self.stored(container) == text)
    #expect(try !container.rawMailbox().isHeld)
    let hold = try Mailboxctl.run(["hold"] + container.arguments())
    #expect(hold.status == 69)
    #expect(
      hold.stderr
        == "mailboxctl: error: hold: cannot change the mailbox at \(container.url.path)"
        + "/AppGroupMailbox/jobs: with the members this mailboxctl does not know (a newer "
        + "version wrote them; they are kept), the changed settings file would be larger than "
        + "4096 bytes, which no reader reads; nothing was changed (make the change with the "
        + "version that wrote them)\n")
    #expect(try Self.stored(container) == text)
  }
}
