import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// `mailboxctl enqueue` input handling with the built binary: unreadable stdin (C19), byte order
/// marks and CR LF (C23), an import cut short (C28), and why JSON is refused.
@Suite struct CLIEnqueueInputTests {
  /// Runs `script` with `sh -c`, `$0` being the built mailboxctl.
  func shell(_ script: String) throws -> Finished {
    try Processes.start(URL(fileURLWithPath: "/bin/sh"), ["-c", script, Mailboxctl.url.path])
      .finish()
  }

  /// The payloads pending in `container`, oldest first, claimed and acknowledged.
  func drainedPayloads(_ container: TemporaryContainer) throws -> [String] {
    let mailbox = try container.rawMailbox()  // a claim does not keep its mailbox alive
    return try mailbox.claimPending().map { claim in
      try claim.acknowledge()
      return String(decoding: claim.payload, as: UTF8.self)
    }
  }

  @Test func `Closed or directory stdin exits 66 with one line naming the read failure (C19)`()
    throws
  {
    let container = try TemporaryContainer()
    let location = "--container '\(container.url.path)' --namespace jobs"
    let closed = try shell("exec \"$0\" enqueue \(location) <&-")
    #expect(closed.reason == .exit)
    #expect(closed.status == 66)
    #expect(closed.stdout == "")
    #expect(
      closed.stderr
        == "mailboxctl: error: enqueue: cannot read standard input: Bad file descriptor "
        + "(errno 9); nothing was enqueued\n")
    let directory = try shell("exec \"$0\" enqueue \(location) --lines < /")
    #expect(directory.reason == .exit)
    #expect(directory.status == 66)
    #expect(
      directory.stderr
        == "mailboxctl: error: enqueue: cannot read standard input: Is a directory (errno 21); "
        + "nothing was enqueued\n")
    // Nothing written: the mailbox was not even created.
    #expect(
      !FileManager.default.fileExists(
        atPath: container.url.appendingPathComponent("AppGroupMailbox").path))
  }

  @Test func `An enqueue that created the mailbox says so; into an existing one it says nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments(namespace: "jbos")
    let first = try Mailboxctl.run(["enqueue"] + location + ["--data", "1"])
    #expect(first.status == 0)
    #expect(
      first.stderr
        == "mailboxctl: enqueue: created the mailbox \(container.url.path)/AppGroupMailbox/jbos "
        + "with the default settings ('mailboxctl create' chooses them)\n")
    let second = try Mailboxctl.run(["enqueue"] + location + ["--data", "2"])
    #expect(second.status == 0)
    #expect(second.stderr == "")
    // An import that stops early into a mailbox it created says so before where to resume.
    let fresh = container.arguments(namespace: "fresh")
    let cut = try Processes.start(
      Mailboxctl.url, ["enqueue"] + fresh + ["--lines"],
      stdin: Data((1...101).map { "\($0)\n" }.joined().utf8)
    ).finish()
    #expect(cut.status == 75)
    #expect(
      cut.stderr.hasPrefix(
        "mailboxctl: enqueue: created the mailbox \(container.url.path)/AppGroupMailbox/fresh "
          + "with the default settings ('mailboxctl create' chooses them)\n"
          + "mailboxctl: error: enqueue: the mailbox is full (depth 100, maxMessages 100); "
          + "100 of 101 messages stored"), "\(cut.stderr)")
  }

  @Test func `Input refused before anything is stored leaves no new mailbox behind`() throws {
    let container = try TemporaryContainer()
    let old = ISO8601.format(Date(timeIntervalSinceNow: -2 * 86_400))
    let cases: [([String], String)] = [
      (["--data", "nope"], "not valid JSON near line 1, column 1; nothing was enqueued"),
      (
        ["--lines", "--data", "1\nnope"],
        "line 2: not valid JSON near column 1; nothing was enqueued"
      ),
      (
        ["--data", "\"" + String(repeating: "x", count: 70_000) + "\""],
        "the message file would be 70106 bytes, over the limit of 65536 (the mailbox's "
          + "maxPayloadBytes); nothing was enqueued"
      ),
      (
        ["--delay", "100000", "--data", "1"],
        "the message would expire before it is due (the mailbox's message lifetime is 86400 s); "
          + "nothing was enqueued ('mailboxctl create --message-lifetime SECONDS' raises it)"
      ),
      (
        ["--enqueued-at", old, "--data", "1"],
        "the message is older than the mailbox's message lifetime (86400 s); nothing was "
          + "enqueued ('mailboxctl create --message-lifetime SECONDS' raises it)"
      ),
    ]
    for (options, reason) in cases {
      let result = try Mailboxctl.run(["enqueue"] + container.arguments() + options)
      #expect(result.status == 65, "\(options)")
      #expect(result.stderr == "mailboxctl: error: enqueue: \(reason)\n", "\(options)")
      #expect(
        !FileManager.default.fileExists(atPath: container.url.path + "/AppGroupMailbox"),
        "\(options)")
    }
    // A key the library refuses (found by an adversarial review), and --lines input of blank
    // lines only, which stores nothing.
    let badKey = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", "1", "--key", "bad key"])
    #expect(badKey.status == 64)
    #expect(badKey.stderr.hasPrefix("mailboxctl: error: enqueue: --key needs 1 to 128 bytes"))
    let blank = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines", "--data", "\n  \n"])
    #expect(blank.status == 0, "\(blank.stderr)")
    #expect(blank.stdout == "")
    #expect(!FileManager.default.fileExists(atPath: container.url.path + "/AppGroupMailbox"))
    // Into an existing mailbox, the hint names config.
    _ = try container.rawMailbox()
    let existing = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--enqueued-at", old, "--data", "1"])
    #expect(existing.status == 65)
    #expect(
      existing.stderr
        == "mailboxctl: error: enqueue: the message is older than the mailbox's message lifetime "
        + "(86400 s); nothing was enqueued ('mailboxctl config --message-lifetime SECONDS' "
        + "raises it)\n")
    #expect(container.names("pending").isEmpty)
  }

  @Test func `A closed stdout never lends its number to a mailbox file; the exit says stored`()
    throws
  {
    let container = try TemporaryContainer()
    let location = "--container '\(container.url.path)' --namespace jobs"
    let result = try shell("exec \"$0\" enqueue \(location) --data '{\"n\":1}' >&-")
    #expect(result.status == 0)
    #expect(
      result.stderr
        == "mailboxctl: enqueue: the message was stored, but writing stdout failed: "
        + "Bad file descriptor (errno 9)\n"
        + "mailboxctl: enqueue: created the mailbox \(container.url.path)/AppGroupMailbox/jobs "
        + "with the default settings ('mailboxctl create' chooses them)\n")
    #expect(try drainedPayloads(container) == ["{\"n\":1}"])
    let state = try String(
      contentsOf: container.url.appendingPathComponent("AppGroupMailbox/jobs/state"),
      encoding: .utf8)
    #expect(!state.contains("-"))  // no message id was written into the state file
  }

  @Test func `A byte order mark and CR LF line ends are dropped, never stored (C23)`() throws {
    let container = try TemporaryContainer()
    let bom = Data([0xEF, 0xBB, 0xBF])
    let single = try Mailboxctl.run(
      ["enqueue"] + container.arguments(), stdin: bom + Data("{\"a\":1}".utf8))
    #expect(single.status == 0)
    let lines = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"],
      stdin: Data("{\"a\":1}\r\n{\"a\":2}\r\n".utf8))
    #expect(lines.status == 0)
    #expect(try drainedPayloads(container) == ["{\"a\":1}", "{\"a\":1}", "{\"a\":2}"])
    // A BOM on each concatenated file's first line, CR LF inside a pretty-printed value.
    let concatenated = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"],
      stdin: bom + Data("1\r\n".utf8) + bom + Data("\"two\"\r\n\r\n".utf8))
    #expect(concatenated.status == 0)
    let pretty = try Mailboxctl.run(
      ["enqueue"] + container.arguments(),
      stdin: bom + Data("{\r\n  \"a\": [1,\r\n 2]\r\n}\r\n".utf8))
    #expect(pretty.status == 0)
    #expect(try drainedPayloads(container) == ["1", "\"two\"", "{\n  \"a\": [1,\n 2]\n}"])
    // Every line drain prints parses as JSON.
    _ = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"],
      stdin: bom + Data("{\"a\":1}\r\n[2]\r\n".utf8))
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    let objects = try jsonLines(drained.stdout)
    #expect(objects.count == 2)
    #expect((objects[0]["message"] as? [String: Int]) == ["a": 1])
  }

  @Test func `Text that is not UTF-8 or holds a stray byte order mark exits 65`() throws {
    let container = try TemporaryContainer()
    let utf16 = try Mailboxctl.run(
      ["enqueue"] + container.arguments(), stdin: Data([0xFF, 0xFE, 0x31, 0x00]))
    #expect(utf16.status == 65)
    #expect(
      utf16.stderr
        == "mailboxctl: error: enqueue: not UTF-8 text (JSON text must be UTF-8, RFC 8259 "
        + "section 8.1); nothing was enqueued\n")
    let stray = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"],
      stdin: Data("1\n ".utf8) + Data([0xEF, 0xBB, 0xBF]) + Data("2\n".utf8))
    #expect(stray.status == 65)
    #expect(
      stray.stderr
        == "mailboxctl: error: enqueue: line 2: a byte order mark is allowed only at the start "
        + "of the input (or of a line); nothing was enqueued\n")
    #expect(container.names("pending").isEmpty)
  }

  @Test func `JSON errors say why: empty, more than one value, nested too deep`() throws {
    let container = try TemporaryContainer()
    func refusal(_ input: String, _ options: [String] = []) throws -> String {
      let result = try Mailboxctl.run(
        ["enqueue"] + container.arguments() + options, stdin: Data(input.utf8))
      #expect(result.status == 65, "\(input)")
      #expect(result.stdout == "")
      return result.stderr
    }
    let prefix = "mailboxctl: error: enqueue: "
    let end = "; nothing was enqueued\n"
    #expect(try refusal(" \r\n") == prefix + "empty input: no JSON value" + end)
    #expect(
      try refusal("{\"a\":1}\n{\"a\":2}\n")
        == prefix + "more than one JSON value (the second starts on line 2); use --lines for "
        + "one message a line" + end)
    #expect(
      try refusal("\n\n\"x\" \"y\"")
        == prefix + "more than one JSON value (the second starts on line 3); use --lines for "
        + "one message a line" + end)
    #expect(
      try refusal("1\n\ntrue false\n", ["--lines"])
        == prefix + "line 3: more than one JSON value on the line" + end)
    let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
    #expect(try refusal(deep) == prefix + "arrays and objects nested more than 512 deep" + end)
    #expect(
      try refusal("1\n" + deep + "\n", ["--lines"])
        == prefix + "line 2: arrays and objects nested more than 512 deep" + end)
    #expect(try refusal("{\"a\": tru}") == prefix + "not valid JSON near line 1, column 7" + end)
    // Where the grammar stops reading: the line and column of the input, not of the value.
    #expect(
      try refusal("\n{\n  \"a\": 1,\n  \"b\": [1 2]\n}\n")
        == prefix + "not valid JSON near line 4, column 11" + end)
    #expect(
      try refusal("1\n  {\"a\":x}\n", ["--lines"])
        == prefix + "line 2: not valid JSON near column 8" + end)
    // Columns count characters, as an editor shows them, and not a byte order mark.
    #expect(
      try refusal("{\"é€😀\": x}") == prefix + "not valid JSON near line 1, column 9" + end)
    #expect(
      try refusal("\u{FEFF}{\"a\": x}") == prefix + "not valid JSON near line 1, column 7" + end)
    #expect(
      try refusal("1\n\u{FEFF}{\"é\": x}\n", ["--lines"])
        == prefix + "line 2: not valid JSON near column 7" + end)
    // A value followed by text that is not a value is not "more than one value".
    #expect(
      try refusal("{\"a\":1}\n// x\n")
        == prefix + "not valid JSON: text that is not a JSON value follows the value (from line 2)"
        + end)
    #expect(
      try refusal("1\n2 # x\n", ["--lines"])
        == prefix + "line 2: not valid JSON: text that is not a JSON value follows the value" + end)
    #expect(container.names("pending").isEmpty)
    let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
    #expect(
      try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", deepest]).status == 0)
  }

  @Test
  func `An import cut short by its pipe says how many lines were stored and where to resume (C28)`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()  // there already: no note that the import created it
    let file = container.url.appendingPathComponent("import.jsonl")
    try Data((1...100).map { "{\"n\":\($0)}\n" }.joined().utf8).write(to: file)
    let location = "--container '\(container.url.path)' --namespace jobs"
    let cut = try shell(
      "\"$0\" enqueue \(location) --lines < '\(file.path)' 2> '\(file.path).err' | head -n 1; "
        + "cat '\(file.path).err'")
    let lines = cut.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == 2)
    let stored = container.names("pending").count
    #expect(stored >= 1 && stored < 100)
    #expect(
      lines.last
        == "mailboxctl: error: enqueue: writing stdout failed: Broken pipe (errno 32); "
        + "\(stored) of 100 messages stored (input lines 1 to \(stored)); the first line not "
        + "stored is line \(stored + 1): resume from it")
    // The documented rule: resuming from that line neither loses nor repeats a message.
    let resumed = try shell(
      "tail -n +\(stored + 1) '\(file.path)' | \"$0\" enqueue \(location) --lines > /dev/null")
    #expect(resumed.status == 0)
    #expect(try drainedPayloads(container) == (1...100).map { "{\"n\":\($0)}" })
  }

  @Test func `An import whose stdout has no reader stores exactly one message and says so`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()  // there already: no note that the import created it
    let file = container.url.appendingPathComponent("import.jsonl")
    try Data((1...100).map { "\($0)\n" }.joined().utf8).write(to: file)
    let result = try Mailboxctl.runWithoutReader(
      ["enqueue"] + container.arguments() + ["--lines"], input: file)
    #expect(result.status == 74)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: writing stdout failed: Broken pipe (errno 32); "
        + "1 of 100 messages stored (input lines 1 to 1); the first line not stored is line 2: "
        + "resume from it\n")
    #expect(try drainedPayloads(container) == ["1"])
  }

  @Test func `A full mailbox during --lines says where to resume and exits 75`() throws {
    let container = try TemporaryContainer()
    #expect(
      try Mailboxctl.run(["create"] + container.arguments() + ["--max-messages", "2"]).status == 0)
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"], stdin: Data("1\n\n2\n3\n4\n".utf8))
    #expect(result.status == 75)
    #expect(result.stdout.split(separator: "\n").count == 2)
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: the mailbox is full (depth 2, maxMessages 2); 2 of 4 "
        + "messages stored (input lines 1 to 3); the first line not stored is line 4: resume "
        + "from it\n")
  }

  /// Found by an adversarial session: `CommandLine.arguments` repairs bytes that are not UTF-8,
  /// so `--data` stored U+FFFD where the byte 0xFF was given (exit 0), and a container path or a
  /// type tag named another directory or tag than the one given.
  @Test(arguments: [
    #"enqueue --container "$1" --namespace jobs --data "$(printf '"\377"')""#,
    #"enqueue --container "$1/x$(printf '\377')" --namespace jobs --data 1"#,
    #"enqueue --container "$1" --namespace jobs --type "$(printf 'T\376')" --data 1"#,
  ])
  func `An argument that is not UTF-8 is refused with exit 64, nothing written`(command: String)
    throws
  {
    let container = try TemporaryContainer()
    let result = try Processes.start(
      URL(fileURLWithPath: "/bin/sh"),
      ["-c", #""$0" "# + command, Mailboxctl.url.path, container.url.path]
    ).finish()
    #expect(result.status == 64, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("mailboxctl: error: argument "), "\(result.stderr)")
    #expect(result.stderr.contains("is not UTF-8 text"))
    #expect(
      (try? FileManager.default.contentsOfDirectory(atPath: container.url.path)) ?? [] == [])
  }

  /// Found by an adversarial review: one message's input was read whole, however large, before
  /// it was refused (a runaway producer took gigabytes). Reading stops past 65 MiB, more than
  /// any message file can hold.
  @Test func `One message's input is refused while read once it passes 65 MiB`() throws {
    let container = try TemporaryContainer()
    let location = "--container '\(container.url.path)' --namespace jobs"
    let result = try shell(
      "head -c 80000000 /dev/zero | tr '\\0' a | \"$0\" enqueue \(location); echo $? >&2")
    #expect(result.stdout == "")
    #expect(
      result.stderr
        == "mailboxctl: error: enqueue: standard input holds more than 68157440 bytes, more than "
        + "one message can be (a message file holds at most 67108864 bytes, the largest "
        + "maxPayloadBytes); nothing was enqueued (--lines takes one message a line)\n65\n")
    #expect(
      (try? FileManager.default.contentsOfDirectory(atPath: container.url.path)) ?? [] == [])
  }
}
