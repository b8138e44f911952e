import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The real-data run: every entry of this machine's Debian package database goes through the
/// mailbox from 4 producer processes to `mailboxctl drain --follow --exec python3`, which stores
/// each in SQLite.
@Suite struct CLIRealDataTests {
  static let database = "/var/lib/dpkg/status"
  static let python = "/usr/bin/python3"

  static let insert = """
    import json, os, sqlite3, sys
    message = json.loads(sys.stdin.buffer.read())
    db = sqlite3.connect(sys.argv[1], timeout=120)
    db.execute("pragma synchronous=off")
    db.execute("create table if not exists entries (idx integer, text text, id text, deliveries integer)")
    db.execute("insert into entries values (?, ?, ?, ?)", (message["index"], message["text"],
      os.environ["MAILBOX_ID"], int(os.environ["MAILBOX_DELIVERY_COUNT"])))
    db.commit()
    """

  static let dump = """
    import json, sqlite3, sys
    db = sqlite3.connect(sys.argv[1])
    rows = db.execute("select idx, text from entries order by idx, rowid").fetchall()
    sys.stdout.write(json.dumps(rows))
    """

  /// Whether this machine has what the test reads: Debian's package database and python3.
  static var hasRealData: Bool {
    FileManager.default.fileExists(atPath: database)
      && FileManager.default.isExecutableFile(atPath: python)
  }

  @Test(
    .enabled(
      if: hasRealData || ProcessInfo.processInfo.environment["CI"] == "true",
      "needs /var/lib/dpkg/status and /usr/bin/python3 (under CI=true they must be there)"))
  func
    `Every dpkg status entry goes from 4 producers through drain --follow into SQLite exactly once`()
    throws
  {
    try #require(Self.hasRealData, "needs \(Self.database) and \(Self.python)")
    let text = try Data(contentsOf: URL(fileURLWithPath: Self.database))
    let entries = String(decoding: text, as: UTF8.self).components(separatedBy: "\n\n")
      .filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
    try #require(entries.count > 100)
    #expect(entries.contains { $0.unicodeScalars.contains { !$0.isASCII } })
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(
      limits: .init(maxMessages: 1_000_000, maxPayloadBytes: 1_048_576))
    let db = container.url.appendingPathComponent("entries.sqlite").path
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--jobs", "2", "--exec", Self.python, "-c",
        Self.insert, db,
      ])
    let producers = try (0..<4).map { slice in
      try Processes.start(
        Processes.product("MailboxTestWorker"),
        ["dpkg-produce", container.url.path, "jobs", Self.database, String(slice), "4"])
    }
    for producer in producers {
      let finished = try producer.finish(deadline: 300)
      #expect(finished.status == 0, "\(finished.stderr)")
    }
    let drained = waitUntil(deadline: 600) {
      guard let status = try? mailbox.inspector.status() else { return false }
      return status.pending == 0 && status.claimed == 0
    }
    #expect(drained)
    drain.signal(SIGTERM)
    let result = try drain.finish(deadline: 120)
    #expect(result.status == 0)
    #expect(result.reason == .exit)
    #expect(
      result.stderr.hasPrefix(
        "mailboxctl: drain: delivered \(entries.count), released 0, quarantined 0 in "))
    #expect(result.stderr.hasSuffix("; stopped by SIGTERM\n"))
    let dumped = try Processes.start(
      URL(fileURLWithPath: Self.python), ["-c", Self.dump, db]
    ).finish(deadline: 120)
    #expect(dumped.status == 0)
    let rows = try #require(
      try JSONSerialization.jsonObject(with: Data(dumped.stdout.utf8)) as? [[Any]])
    #expect(rows.count == entries.count)
    #expect(rows.map { $0[0] as? Int } == Array(0..<entries.count))
    var mismatches = 0
    for (row, entry) in zip(rows, entries) {
      if Array(((row[1] as? String) ?? "").utf8) != Array(entry.utf8) { mismatches += 1 }
    }
    #expect(mismatches == 0)
    let status = try mailbox.inspector.status()
    #expect(status.pending == 0)
    #expect(status.claimed == 0)
    #expect(status.quarantined == 0)
    #expect(status.temporaryFiles == 0)
  }
}
