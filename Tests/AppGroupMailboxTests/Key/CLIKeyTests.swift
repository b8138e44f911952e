import Foundation
import Testing

@testable import AppGroupMailbox

/// `mailboxctl enqueue --key K --on-conflict keep|replace` with the built binary.
@Suite struct CLIKeyTests {
  func enqueue(_ container: TemporaryContainer, _ rest: [String]) throws -> Finished {
    try Mailboxctl.run(["enqueue"] + container.arguments() + rest)
  }

  @Test func `Replace prints the pending message's id; keep writes nothing and says so`() throws {
    let container = try TemporaryContainer()
    let first = try enqueue(container, ["--key", "widget", "--data", "\"a\""])
    #expect(first.status == 0)
    let id = first.stdout.trimmingCharacters(in: .newlines)
    let replaced = try enqueue(container, ["--key", "widget", "--data", "\"b\"", "--json"])
    #expect(replaced.status == 0)
    #expect(
      replaced.stdout
        == "{\"id\":\"\(id)\",\"duplicate\":false,\"notBefore\":null,\"keyOutcome\":\"replaced\"}\n"
    )
    let kept = try enqueue(
      container, ["--key", "widget", "--on-conflict", "keep", "--data", "\"c\""])
    #expect(kept.status == 0)
    #expect(kept.stdout == "\(id)\n")
    #expect(
      kept.stderr
        == "mailboxctl: enqueue: message \(id) with key widget is pending; nothing was written\n")
    #expect(try container.pendingFiles().map(\.message) == ["\"b\""])
    #expect(try container.pendingFiles().map(\.key) == ["widget"])
  }

  @Test func `Wrong key options exit 64 and write nothing`() throws {
    let container = try TemporaryContainer()
    let cases: [([String], String)] = [
      (
        ["--key", "a/b"],
        "--key needs 1 to 128 bytes of A-Z a-z 0-9 . _ - :, not starting with "
          + "'.', not 'a/b'; nothing was enqueued"
      ),
      (["--on-conflict", "keep"], "--on-conflict applies only with --key"),
      (
        ["--key", "k", "--on-conflict", "maybe"], "--on-conflict needs keep or replace, not 'maybe'"
      ),
      (["--key", "k", "--delay", "5"], "--key cannot be combined with --delay"),
      (["--key", "k", "--id", UUID().uuidString], "--key cannot be combined with --id"),
    ]
    for (options, message) in cases {
      let result = try enqueue(container, options + ["--data", "1"])
      #expect(result.status == 64, "\(options)")
      #expect(
        result.stderr.hasPrefix("mailboxctl: error: enqueue: \(message)\n"), "\(result.stderr)")
    }
    let lines = try enqueue(container, ["--key", "k", "--lines", "--data", "1\n2"])
    #expect(lines.status == 64)
    #expect(container.names("pending").isEmpty)
  }
}
