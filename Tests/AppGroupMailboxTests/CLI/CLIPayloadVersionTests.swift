import Foundation
import Testing

@testable import AppGroupMailbox

/// `mailboxctl` and payload versions: `enqueue --payload-version` writes for a versioned Swift
/// consumer, and every command that hands out or shows a message says its version.
@Suite struct CLIPayloadVersionTests {
  static let message = #"{"number":2,"label":"two"}"#

  /// Enqueues `message` with `options`; returns its id.
  func enqueue(_ container: TemporaryContainer, _ options: [String]) throws -> String {
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", Self.message] + options)
    try #require(result.status == 0, "\(result.stderr)")
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  @Test func `A message enqueued with --payload-version 2 is decoded by a version-2 consumer`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try enqueue(container, ["--type", "Job", "--payload-version", "2"])
    #expect(try container.mailbox(JobOne.self, messageType: "Job").claimPending().isEmpty)
    let jobs = try container.mailbox(JobTwo.self, messageType: "Job")
    #expect(try jobs.claimPending().map(\.message) == [JobTwo(number: 2, label: "two")])
    #expect(container.quarantined().isEmpty)
  }

  @Test(arguments: ["0", "-1", "2147483648", "two", ""])
  func `Another --payload-version is a usage error and writes nothing`(value: String) throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "1", "--payload-version", value])
    #expect(result.status == 64)
    #expect(
      result.stderr.contains("--payload-version needs an integer from 1 to 2147483647"),
      "\(result.stderr)")
    #expect(container.names("pending").isEmpty)
  }

  @Test func `--payload-version applies to --key, --delay and --lines enqueues`() throws {
    let container = try TemporaryContainer()
    _ = try enqueue(container, ["--key", "k", "--payload-version", "3"])
    _ = try enqueue(container, ["--delay", "3600", "--payload-version", "4"])
    let lines = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines", "--payload-version", "5"],
      stdin: Data("1\n2\n".utf8))
    #expect(lines.status == 0, "\(lines.stderr)")
    let raw = try container.rawMailbox()
    let entries = try raw.inspector.entries(in: [.pending, .delayed])
    #expect(entries.count == 4)
    let versions = try entries.map { entry in
      try raw.inspector.envelope(entry.fileName)?.payloadVersion
    }
    #expect(versions.sorted { ($0 ?? 0) < ($1 ?? 0) } == [3, 4, 5, 5])
  }

  @Test func `claim --json and drain lines carry payloadVersion`() throws {
    let container = try TemporaryContainer()
    _ = try enqueue(container, ["--payload-version", "2"])
    _ = try enqueue(container, [])
    let claimed = try Mailboxctl.run(["claim"] + container.arguments() + ["--json"])
    #expect(claimed.status == 0, "\(claimed.stderr)")
    #expect(try jsonLines(claimed.stdout).map { $0["payloadVersion"] as? Int } == [2])
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(try jsonLines(drained.stdout).map { $0["payloadVersion"] as? Int } == [1])
  }

  @Test func `drain --exec sets MAILBOX_PAYLOAD_VERSION`() throws {
    let container = try TemporaryContainer()
    _ = try enqueue(container, ["--payload-version", "7"])
    _ = try enqueue(container, [])
    let out = container.url.appendingPathComponent("out")
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments()
        + ["--exec", "sh", "-c", "echo \"$MAILBOX_PAYLOAD_VERSION\" >> '\(out.path)'"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try String(contentsOf: out, encoding: .utf8) == "7\n1\n")
  }

  @Test func `show prints the payload version and the key`() throws {
    let container = try TemporaryContainer()
    let id = try enqueue(container, ["--key", "refresh", "--payload-version", "2"])
    let text = try Mailboxctl.run(["show"] + container.arguments() + [id])
    #expect(text.status == 0, "\(text.stderr)")
    #expect(text.lines.contains("payload version: 2"), "\(text.stdout)")
    #expect(text.lines.contains("key:             refresh"), "\(text.stdout)")
    let json = try Mailboxctl.run(["show"] + container.arguments() + [id, "--json"])
    let object = try #require(try jsonLines(json.stdout).first)
    #expect(object["payloadVersion"] as? Int == 2)
    #expect(object["key"] as? String == "refresh")
    let plain = try enqueue(container, [])
    let unkeyed = try #require(
      try jsonLines(
        try Mailboxctl.run(["show"] + container.arguments() + [plain, "--json"]).stdout
      ).first)
    #expect(unkeyed["payloadVersion"] as? Int == 1)
    #expect(unkeyed["key"] is NSNull)
  }
}
