import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `mailboxctl migrate` converts a spool in the Apple package's flat layout
/// (Fixtures/apple-spool-0.2.1, see Fixtures/README.md) into this format.
@Suite struct MigrationTests {
  static func id(_ number: Int) -> UUID {
    UUID(uuidString: String(format: "30000000-0000-4000-8000-%012d", number))!
  }

  /// The fixture's messages in the old order (enqueuedAt, then pending name): C (imported with
  /// an older date), A, B (claimed), D and E (equal dates: by name).
  static let expected: [(id: UUID, seconds: Double, deliveryCount: Int, payload: String)] = [
    (id(3), 788_918_399.25, 1, #"{"value":"C imported with an older date"}"#),
    (id(1), 788_918_400.5, 1, #"{"value":"A"}"#),
    (id(2), 788_918_401, 2, #"{"value":"B"}"#),
    (id(4), 788_918_402, 1, #"{"value":"D \u00e9 \"q\" a\/b","n":[1,2.5,{"x":null}]}"#),
    (id(5), 788_918_402, 1, #"{"value":"E"}"#),
  ]

  /// The fixture's messages are dated 2026: the mailbox that migrate creates keeps them for a
  /// decade (an option that applies when the command creates the mailbox).
  static let longLived = ["--message-lifetime", "315360000"]

  /// The namespace directory's old-format entries.
  static func legacyNames(_ container: TemporaryContainer) throws -> [String] {
    try FileManager.default.contentsOfDirectory(
      atPath: container.url.appendingPathComponent("AppGroupMailbox/jobs").path
    ).filter { ["pending-", "claimed-", "quarantine-"].contains(where: $0.hasPrefix) }
  }

  /// Claims everything (with a lifetime long enough for the fixture's 2026 dates) and checks it
  /// is exactly the expected messages, in order, with their dates and delivery counts.
  static func expectConverted(_ container: TemporaryContainer) throws {
    let mailbox = try container.rawMailbox(
      limits: .init(messageLifetime: 100 * 365 * 86_400))
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.id) == expected.map(\.id))
    #expect(
      claims.map(\.enqueuedAt.timeIntervalSinceReferenceDate) == expected.map(\.seconds))
    #expect(claims.map(\.deliveryCount) == expected.map(\.deliveryCount))
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == expected.map(\.payload))
    #expect(claims.allSatisfy { $0.messageType.isEmpty })
    #expect(try legacyNames(container).isEmpty)
    #expect(container.quarantined().map(\.reason) == [.foreign, .foreign])
  }

  @Test func `A spool of the Apple package keeps its ids, dates, order and delivery counts`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let first = try Mailboxctl.run(
      ["migrate"] + container.arguments() + Self.longLived + ["--json"])
    #expect(first.status == 0)
    #expect(
      first.stdout == "{\"imported\":5,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":2}\n")
    let again = try Mailboxctl.run(["migrate"] + container.arguments() + Self.longLived)
    #expect(again.status == 0)
    #expect(
      again.stdout
        == "imported:         0\nalready present:  0\nexpired:          0\nquarantined:      0\n")
    try Self.expectConverted(container)
  }

  @Test func `A migration crashed after every step and run again neither loses nor duplicates`()
    throws
  {
    var step = 0
    while true {
      let container = try TemporaryContainer()
      try FixtureTests.install("apple-spool-0.2.1", into: container)
      let crashed = try Mailboxctl.run(
        ["migrate"] + container.arguments() + Self.longLived + [
          "--crash-after-mutations", String(step),
        ])
      if crashed.status == 0 { break }
      #expect(crashed.status == 86, "step \(step): the crash point's exit status")
      let rerun = try Mailboxctl.run(
        ["migrate"] + container.arguments() + Self.longLived + ["--json"])
      #expect(rerun.status == 0, "step \(step): \(rerun.stderr)")
      try Self.expectConverted(container)
      step += 1
      guard step < 500 else {
        Issue.record("the migration never finished")
        return
      }
    }
    #expect(step > 20)
  }

  @Test func `A migration killed with SIGKILL midway and run again delivers every message once`()
    throws
  {
    let container = try TemporaryContainer()
    let directory = container.url.appendingPathComponent("AppGroupMailbox/jobs")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let count = 400
    var ids: [UUID] = []
    for index in 0..<count {
      let id = UUID()
      ids.append(id)
      let seconds = 788_918_400 + Double(index) / 8
      let name = String(format: "pending-%020llu-%@.json", 1_767_225_600_000 + index, id.uuidString)
      try Data(
        "{\"id\":\"\(id.uuidString)\",\"enqueuedAt\":\(seconds),\"message\":\(index)}".utf8
      ).write(to: directory.appendingPathComponent(name))
    }
    let limits = ["--max-messages", "1000"]
    let running = try Processes.start(
      Mailboxctl.url, ["migrate"] + container.arguments() + Self.longLived + limits)
    #expect(waitUntil { container.names("pending").count >= count / 4 })
    running.signal(SIGKILL)
    let killed = try running.finish()
    #expect(killed.reason == .uncaughtSignal)
    #expect(killed.status == SIGKILL)
    let left = try Self.legacyNames(container).count
    #expect(left > 0 && left < count)
    let rerun = try Mailboxctl.run(
      ["migrate"] + container.arguments() + Self.longLived + limits + ["--json"])
    #expect(rerun.status == 0)
    let report = try #require(try jsonLines(rerun.stdout).first)
    let imported = report["imported"] as? Int ?? 0
    let alreadyPresent = report["alreadyPresent"] as? Int ?? 0
    #expect(imported + alreadyPresent == left)
    #expect(alreadyPresent <= 1)
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 1000, messageLifetime: 100 * 365 * 86_400))
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.id) == ids)
    #expect(
      claims.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<count).map(String.init))
    #expect(try Self.legacyNames(container).isEmpty)
  }

  @Test func `Migrate refuses while a process of the old format holds its lock`() throws {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let before = try Self.legacyNames(container).sorted()
    let lock = open(
      container.url.appendingPathComponent("AppGroupMailbox/jobs/.mailbox.lock").path, O_RDWR)
    #expect(lock >= 0)
    defer { close(lock) }
    #expect(flock(lock, LOCK_EX) == 0)
    let refused = try Mailboxctl.run(["migrate"] + container.arguments() + Self.longLived)
    #expect(refused.status == 75)
    #expect(refused.stderr.contains(".mailbox.lock; stop it and run again"))
    #expect(refused.stderr.contains("another process (one of the old format, or another migrate)"))
    #expect(try Self.legacyNames(container).sorted() == before)
    #expect(container.names("pending").isEmpty)
    #expect(flock(lock, LOCK_UN) == 0)
    #expect(try Mailboxctl.run(["migrate"] + container.arguments() + Self.longLived).status == 0)
    try Self.expectConverted(container)
  }

  @Test func `Nothing to migrate changes nothing and creates no lock`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    try raw.enqueue(Data("1".utf8))
    let result = try Mailboxctl.run(
      ["migrate"] + container.arguments() + Self.longLived + ["--json"])
    #expect(result.status == 0)
    #expect(
      result.stdout == "{\"imported\":0,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":0}\n")
    #expect(
      !FileManager.default.fileExists(
        atPath: container.url.appendingPathComponent("AppGroupMailbox/jobs/.mailbox.lock").path))
    #expect(container.names("pending").count == 1)
  }

  /// The fixture's old message files (the two that are not messages excluded).
  static let oldMessageFiles = 5

  @Test func `Messages older than the lifetime are counted as expired and their old files stay`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    // One day and 1.5 s after the fixture's base: C, A and B are a day old, D and E are not.
    let clock = FixtureTests.clock(at: 1_767_225_600_000_000 + 86_401_500_000)
    let diagnostics = DiagnosticRecorder()
    let mailbox = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", limits: .init(),
      overflowPolicy: .rejectNewest,
      diagnostic: { diagnostics.record($0) }, durability: .full, permissions: .private,
      clock: clock.mailboxClock)
    let first = try mailbox.migrateLegacySpool()
    var expected = LegacyMigrationReport()
    expected.imported = 2
    expected.expired = 3
    expected.oldestExpired = Date(timeIntervalSinceReferenceDate: Self.expected[0].seconds)
    expected.quarantined = 2
    #expect(first == expected)
    #expect(try Self.legacyNames(container).count == 3)
    #expect(container.names("pending").count == 2)
    #expect(diagnostics.count(.expiredMessageRemoved) == 0)
    try mailbox.updateSettings { $0.messageLifetime = 100 * 365 * 86_400 }
    var second = LegacyMigrationReport()
    second.imported = 3
    #expect(try mailbox.migrateLegacySpool() == second)
    try Self.expectConverted(container)
  }

  @Test func `Migrate with too short a lifetime deletes nothing, exits 65 and says what to do`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let refused = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(refused.status == 65)
    #expect(
      refused.stdout == "{\"imported\":0,\"alreadyPresent\":0,\"expired\":5,\"quarantined\":2}\n")
    #expect(refused.stderr.contains("older than the mailbox's message lifetime (86400 s)"))
    #expect(refused.stderr.contains("mailboxctl config"))
    // Run without create first, it chose the settings: it says so (a new user's migrate made
    // a private mailbox with the defaults, silently).
    #expect(
      refused.stderr.hasPrefix(
        "mailboxctl: migrate: made the mailbox's settings with the defaults (message lifetime "
          + "86400 s, maxMessages 100, private); 'mailboxctl create' chooses them before migrate, "
          + "'mailboxctl config' changes all but the sharing mode\n"))
    #expect(try Self.legacyNames(container).count == Self.oldMessageFiles)
    #expect(container.names("pending").isEmpty)
    let raised = try Mailboxctl.run(
      ["config"] + container.arguments() + ["--message-lifetime", "315360000"])
    #expect(raised.status == 0)
    let again = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(again.status == 0, "\(again.stderr)")
    #expect(!again.stderr.contains("made the mailbox's settings"))
    #expect(
      again.stdout == "{\"imported\":5,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":0}\n")
    try Self.expectConverted(container)
  }

  /// Found by an adversarial review: an old message over the mailbox's payload bound stopped
  /// migrate with the library's bare "The encoded message is N bytes" (no word of what stays or
  /// what to do).
  @Test func `Migrate stopped by the payload bound says what stays and how to go on`() throws {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + Self.longLived + ["--max-payload-bytes", "150"])
    #expect(created.status == 0, "\(created.stderr)")
    let refused = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(refused.status == 65)
    #expect(
      refused.stderr.hasPrefix(
        "mailboxctl: error: migrate: an old message would make a message file of "),
      "\(refused.stderr)")
    #expect(
      refused.stderr.contains(
        " bytes, over the limit of 150 (maxPayloadBytes): what was imported stays, "),
      "\(refused.stderr)")
    #expect(
      refused.stderr.contains("; raise the bound, for example 'mailboxctl config --container"),
      "\(refused.stderr)")
    #expect(try Self.legacyNames(container).count > 0)
    let raised = try Mailboxctl.run(
      ["config"] + container.arguments() + ["--max-payload-bytes", "65536"])
    #expect(raised.status == 0)
    let again = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(again.status == 0, "\(again.stderr)")
    try Self.expectConverted(container)
  }

  @Test func `create on an unconverted directory sets the lifetime migrate then uses`() throws {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let created = try Mailboxctl.run(["create"] + container.arguments() + Self.longLived)
    #expect(created.status == 0, "\(created.stderr)")
    #expect(created.stderr.contains("mailboxctl migrate"))
    // The mailbox is there now: the refusal points to migrate alone.
    let status = try Mailboxctl.run(["status"] + container.arguments())
    #expect(status.status == 69, "\(status.stderr)")
    #expect(!status.stderr.contains("mailboxctl create"), "\(status.stderr)")
    let migrated = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(migrated.status == 0, "\(migrated.stderr)")
    #expect(migrated.stderr.isEmpty)
    try Self.expectConverted(container)
  }

  @Test func `Limit options given to migrate on an unconverted directory apply, and it says so`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let migrated = try Mailboxctl.run(["migrate"] + container.arguments() + Self.longLived)
    #expect(migrated.status == 0)
    #expect(!migrated.stderr.contains("ignored"))
    #expect(migrated.stderr.contains("--message-lifetime only set the settings of a mailbox"))
    try Self.expectConverted(container)
  }

  @Test func `Migrate of a namespace without old files says where it looked`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox(namespace: "other")
    let result = try Mailboxctl.run(["migrate"] + container.arguments(namespace: "other"))
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stderr
        == "mailboxctl: migrate: \(container.url.path)/AppGroupMailbox/other holds no files of "
        + "the old format (pending-*.json, claimed-*.json, quarantine-*.bin): already converted, "
        + "or the Apple package's spool is elsewhere (it is <container>/AppGroupMailbox/"
        + "<namespace>)\n")
  }

  @Test func `Other commands on an unconverted directory point to migrate and create nothing`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    let commands: [[String]] = [
      ["drain", "--exec", "true"], ["status"], ["list"], ["enqueue", "--data", "1"], ["claim"],
    ]
    for command in commands {
      let result = try Mailboxctl.run(
        [command[0]] + container.arguments() + command.dropFirst())
      #expect(result.status == 69, "\(command): \(result.stderr)")
      #expect(result.stderr.contains("run 'mailboxctl migrate"), "\(command): \(result.stderr)")
      // No mailbox there yet: create first chooses the settings migrate would make the defaults.
      #expect(
        result.stderr.contains(
          "(before it, 'mailboxctl create\(container.arguments().map { " " + $0 }.joined())' "
            + "with the settings the mailbox should have"),
        "\(command): \(result.stderr)")
    }
    let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs")
    #expect(!FileManager.default.fileExists(atPath: namespace.appendingPathComponent("state").path))
    #expect(!FileManager.default.fileExists(atPath: container.area("pending").path))
    #expect(try Self.legacyNames(container).count == Self.oldMessageFiles + 2)
  }

  @Test func `The message member is found byte for byte whatever the member order`() {
    let cases: [(String, String?)] = [
      (#"{"id":"x","message":{"a":[1,"]}"]},"enqueuedAt":1}"#, #"{"a":[1,"]}"]}"#),
      (#" { "message" : "a\"b" } "#, #""a\"b""#),
      (#"{"messages":1,"message":-2.5e3}"#, "-2.5e3"),
      (#"{"id":"x"}"#, nil),
      (#"[1]"#, nil),
    ]
    for (json, value) in cases {
      let bytes = Array(json.utf8)
      let range = JSONMemberScanner.valueRange(of: "message", in: bytes)
      #expect(range.map { String(decoding: bytes[$0], as: UTF8.self) } == value, "\(json)")
    }
  }
}
