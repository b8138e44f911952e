import AppGroupMailbox
import Foundation
import Testing

@testable import mailboxctl

@Suite struct ArgumentParserTests {
  let spec = CommandSpec(
    name: "demo", summary: "A test grammar.", positionalUsage: "ID", minPositionals: 0,
    maxPositionals: 1,
    options: [
      OptionSpec(name: "--json", kind: .flag, help: "JSON."),
      OptionSpec(name: "--limit", kind: .value("N"), help: "Limit."),
      OptionSpec(name: "--state", kind: .value("S"), help: "State.", repeatable: true),
      OptionSpec(name: "--exec", kind: .rest("CMD [ARG...]"), help: "Command."),
      OptionSpec(name: "--secret", kind: .flag, help: "Hidden.", hidden: true),
    ])

  @Test func `Flags, separate and inline values and a positional are parsed`() throws {
    let parsed = try ArgumentParser.parse(["--json", "--limit", "5", "abc"], spec: spec)
    #expect(parsed.flags == ["--json"])
    #expect(parsed.values == ["--limit": ["5"]])
    #expect(parsed.positionals == ["abc"])
    #expect(try parsed.integer("--limit", in: 1...10) == 5)
    let inline = try ArgumentParser.parse(["--limit=7"], spec: spec)
    #expect(inline.value("--limit") == "7")
  }

  @Test func `A rest option takes every later argument verbatim, options included`() throws {
    let parsed = try ArgumentParser.parse(
      ["--json", "--exec", "python3", "-c", "--limit", "--help"], spec: spec)
    #expect(parsed.values["--exec"] == ["python3", "-c", "--limit", "--help"])
    #expect(parsed.flags == ["--json"])
    #expect(!parsed.wantsHelp)
  }

  @Test func `Repeatable options keep every value in order`() throws {
    let parsed = try ArgumentParser.parse(["--state", "a", "--state=b"], spec: spec)
    #expect(parsed.all("--state") == ["a", "b"])
  }

  @Test func `A double dash ends options`() throws {
    let parsed = try ArgumentParser.parse(["--", "--json"], spec: spec)
    #expect(parsed.positionals == ["--json"])
    #expect(parsed.flags.isEmpty)
  }

  @Test func `Wrong command lines are usage errors with a precise message`() {
    let cases: [([String], String)] = [
      (["--nope"], "unknown option '--nope'"),
      (
        ["--limit"],
        "--limit needs a value (--limit N; write --limit=N for a value that begins with '-')"
      ),
      (["--json=1"], "--json takes no value"),
      (["--json", "--json"], "--json given more than once"),
      (["a", "b"], "unexpected argument 'b'"),
      (["--exec"], "--exec needs CMD [ARG...]"),
    ]
    for (arguments, message) in cases {
      #expect(throws: UsageError(message: message)) {
        try ArgumentParser.parse(arguments, spec: spec)
      }
    }
  }

  @Test func `Numbers out of range and bad seconds are usage errors`() throws {
    let parsed = try ArgumentParser.parse(["--limit", "0"], spec: spec)
    #expect(throws: UsageError(message: "--limit needs an integer from 1 to 10, not '0'")) {
      try parsed.integer("--limit", in: 1...10)
    }
    let seconds = try ArgumentParser.parse(["--limit", "-1"], spec: spec)
    #expect(
      throws: UsageError(
        message: "--limit needs a number of seconds greater than 0 and at most 1000000000, not '-1'"
      )
    ) { try seconds.seconds("--limit") }
    // Decimal only: Double(_:) would read hexadecimal (0x10 as 16 s, 0x1p3 as 8 s).
    for text in ["0x10", "0x1p3", "inf", "nan", "1_0", " 5"] {
      let parsed = try ArgumentParser.parse(["--limit", text], spec: spec)
      #expect(
        throws: UsageError(
          message: "--limit needs a number of seconds greater than 0 and at most 1000000000, "
            + "not '\(text)'")
      ) { try parsed.seconds("--limit") }
    }
    for (text, value) in [("1.5", 1.5), ("1e3", 1e3), ("2E-3", 0.002), (".5", 0.5)] {
      #expect(try ArgumentParser.parse(["--limit", text], spec: spec).seconds("--limit") == value)
    }
  }

  @Test func `Help is requested anywhere before a rest option and skips the positional check`()
    throws
  {
    let parsed = try ArgumentParser.parse(["a", "b", "--help"], spec: spec)
    #expect(parsed.wantsHelp)
  }

  @Test func `Help lists visible options from the table and hides hidden ones`() {
    let help = ArgumentParser.help(for: spec)
    #expect(help.hasPrefix("usage: mailboxctl demo [options] ID\n\nA test grammar.\n\noptions:\n"))
    #expect(help.contains("  --limit N"))
    #expect(help.contains("  --exec CMD [ARG...]"))
    #expect(help.contains("  -h, --help"))
    #expect(!help.contains("--secret"))
  }
}

@Suite struct CLIFormattingTests {
  @Test func `ISO 8601 dates print in UTC to the microsecond and parse back`() throws {
    let date = Date(timeIntervalSince1970: 1_767_225_600.123456)
    #expect(ISO8601.format(date) == "2026-01-01T00:00:00.123456Z")
    let parsed = try #require(ISO8601.parse("2026-01-01T00:00:00.123456Z"))
    #expect(Int64((parsed.timeIntervalSince1970 * 1_000_000).rounded()) == 1_767_225_600_123_456)
  }

  @Test func `ISO 8601 offsets are applied and invalid dates are refused`() throws {
    let date = try #require(ISO8601.parse("2026-01-01T02:30:00+02:30"))
    #expect(date.timeIntervalSince1970 == 1_767_225_600)
    #expect(ISO8601.parse("2026-01-01T00:00:00-0100")?.timeIntervalSince1970 == 1_767_229_200)
    #expect(ISO8601.parse("1970-01-01 00:00:01z")?.timeIntervalSince1970 == 1)
    for bad in [
      "2026-01-01", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00",
      "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00Zjunk", "",
    ] {
      #expect(ISO8601.parse(bad) == nil, "\(bad)")
    }
  }

  @Test func `JSON strings are escaped and raw messages stay on one line`() {
    #expect(JSONText.string("a\"b\\c\nd\u{1}é") == "\"a\\\"b\\\\c\\nd\\u0001é\"")
    var object = JSONObject()
    object.add("id", "x")
    object.add("n", 3)
    object.add("none", nil as String?)
    object.add("message", rawJSON: Data("{\n  \"a\": [1,\r\n2]\n}".utf8))
    #expect(object.text == "{\"id\":\"x\",\"n\":3,\"none\":null,\"message\":{   \"a\": [1,  2] }}")
  }

  @Test func `Drain's retry delay doubles from 1 s up to five minutes by default`() throws {
    let policy = try Drainer.retryPolicy(
      ArgumentParser.parse([], spec: drainCommand.spec))
    #expect(
      policy
        == AppGroupMailboxRetryPolicy(baseDelay: 1, multiplier: 2, maximumDelay: 300, jitter: 0.1))
    #expect(
      (1...10).map { policy.nominalDelay(afterDelivery: $0) }
        == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300])
    #expect(policy.nominalDelay(afterDelivery: 1_000) == 300)
    let custom = try Drainer.retryPolicy(
      ArgumentParser.parse(
        ["--retry-delay", "0.25", "--retry-max-delay", "1", "--retry-jitter", "0"],
        spec: drainCommand.spec))
    #expect(
      custom
        == AppGroupMailboxRetryPolicy(baseDelay: 0.25, multiplier: 2, maximumDelay: 1, jitter: 0))
    #expect((1...4).map { custom.delay(afterDelivery: $0) } == [0.25, 0.5, 1, 1])
    // A base above the default maximum raises the default maximum with it.
    let slow = try Drainer.retryPolicy(
      ArgumentParser.parse(["--retry-delay", "600"], spec: drainCommand.spec))
    #expect(slow.maximumDelay == 600)
  }

  @Test(arguments: [
    (
      ["--retry-delay", "0"],
      "--retry-delay needs a number of seconds greater than 0 and at most 1000000000, not '0'"
    ),
    (
      ["--retry-delay", "x"],
      "--retry-delay needs a number of seconds greater than 0 and at most 1000000000, not 'x'"
    ),
    (
      ["--retry-delay", "2", "--retry-max-delay", "1"],
      "--retry-max-delay (1) is less than --retry-delay (2)"
    ),
    (["--retry-jitter", "1.5"], "--retry-jitter needs a fraction from 0 to 1, not '1.5'"),
    (["--retry-jitter", "-0.1"], "--retry-jitter needs a fraction from 0 to 1, not '-0.1'"),
  ])
  func `Invalid retry options are usage errors`(arguments: [String], message: String) throws {
    #expect(throws: UsageError(message: message)) {
      try Drainer.retryPolicy(ArgumentParser.parse(arguments, spec: drainCommand.spec))
    }
  }

  @Test func `Seconds print with up to three decimals and no trailing zeros`() {
    #expect(
      [0.4, 2, 0.125, 0.0004, 300, 1.5].map { Output.seconds($0) }
        == ["0.4", "2", "0.125", "0", "300", "1.5"])
  }
}
