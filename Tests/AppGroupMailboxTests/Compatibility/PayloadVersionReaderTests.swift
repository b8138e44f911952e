import Foundation
import Testing

@testable import AppGroupMailbox

/// What a reader makes of the header member `payloadVersion` (docs/FORMAT.md, "Message
/// files"): 1 to 2^31 - 1, the range every writer accepts, or absent; anything else is
/// malformed, the same for the Swift reader (both of its paths) and interop/python. A value past
/// the range used to read on both sides (Swift up to 2^63 - 1, Python without bound), so
/// `mailboxctl drain` handed it to the NATS bridge, whose consume.py terminated it: the message
/// was acknowledged on one side and never enqueued on the other.
@Suite struct PayloadVersionReaderTests {
  static let id = UUID()

  /// A header line with `payloadVersion` spelled `token`; `key` sends it down the JSONDecoder
  /// path (the fast reader answers only for the form written without a key).
  static func header(_ token: String, key: Bool) -> String {
    #"{"enqueuedAt":5,"format":1,"id":"\#(id.uuidString.lowercased())","#
      + (key ? #""key":"k","# : "") + #""messageType":"Job","payloadVersion":\#(token)}"#
  }

  /// The Swift reader's verdict: the version read, or nil for malformed.
  static func swiftVerdict(_ line: String) -> Int? {
    guard let (header, _) = try? Envelope.decode(Array((line + "\nP").utf8)) else { return nil }
    return header.declaredPayloadVersion
  }

  static let cases: [(token: String, version: Int?)] = [
    ("1", 1), ("2", 2), ("2147483647", 2_147_483_647),
    ("2147483648", nil), ("3000000000", nil), ("9223372036854775807", nil),
    ("9223372036854775808", nil), ("0", nil), ("-1", nil), ("null", nil), ("true", nil),
    (#""2""#, nil),
  ]

  @Test func `The Swift reader takes 1 to 2^31 - 1 and nothing else, on both of its paths`() {
    for (token, version) in Self.cases {
      for key in [false, true] {
        #expect(Self.swiftVerdict(Self.header(token, key: key)) == version, "\(token) key \(key)")
      }
    }
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python judges every payloadVersion as the Swift reader does`() throws {
    let program = """
      from agm import envelope
      for line in sys.stdin.read().split("\\n"):
          if not line:
              continue
          try:
              header, _ = envelope.decode_header(line.encode("utf-8") + b"\\nP")
              print(header.get("payloadVersion", 1))
          except ValueError as error:
              print(error)
      """
    let lines = Self.cases.map { Self.header($0.token, key: false) }
    let printed = try PythonSpool.lines(
      of: program, stdin: Data(lines.map { $0 + "\n" }.joined().utf8))
    let python = printed.map { Int($0) }
    let swift = lines.map(Self.swiftVerdict)
    #expect(python == swift)
    #expect(swift == Self.cases.map(\.version))
  }

  @Test func `The waiting untyped enqueue records the payload version it is given`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    try raw.enqueue(Data("{}".utf8), payloadVersion: 3, waitingUpTo: 0)
    #expect(try raw.claimPending().map(\.payloadVersion) == [3])
  }
}

/// The size check of `mailboxctl enqueue --key` counts the header's `key` member as well as
/// `payloadVersion`, as the file written would hold them.
@Suite struct CLIKeyedSizeCheckTests {
  @Test(arguments: [(["--key", "k9"], 1035), (["--key", "k9", "--payload-version", "2"], 1054)])
  func `A keyed message over the limit is refused with the size of the file it would be`(
    options: [String], size: Int
  ) throws {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-payload-bytes", "1024"])
    try #require(created.status == 0, "\(created.stderr)")
    // 920 bytes: a file of exactly 1,024 bytes without a key or a payload version.
    let payload = "\"" + String(repeating: "a", count: 918) + "\""
    let fits = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", payload])
    #expect(fits.status == 0, "\(fits.stderr)")
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--data", payload] + options)
    #expect(result.status == 65)
    #expect(
      result.stderr.contains(
        "the message file would be \(size) bytes, over the limit of 1024 (the mailbox's "
          + "maxPayloadBytes); nothing was enqueued"), "\(result.stderr)")
    #expect(container.names("pending").count == 1)
  }
}

/// A keyed replacement carries the replacing message's payload version, through
/// RENAME_EXCHANGE and through the fallback where the filesystem cannot exchange.
@Suite struct KeyedPayloadVersionTests {
  @Test(arguments: [(2, 3), (5, 1), (1, 2147483647)])
  func `A keyed replacement has the new message's version, exchanged or not`(
    old: Int, new: Int
  ) throws {
    for exchange in [true, false] {
      let container = try TemporaryContainer()
      let mailbox = try container.rawMailbox()
      try mailbox.enqueue(Data("\"old\"".utf8), key: "k", onConflict: .replace, payloadVersion: old)
      let rules: [FaultInjection.Rule] =
        exchange ? [] : [.init(call: "renameat2", errno: EINVAL)]
      let (outcome, unfired) = try FaultInjection.withRules(rules) {
        try mailbox.enqueue(
          Data("\"new\"".utf8), key: "k", onConflict: .replace, payloadVersion: new)
      }
      #expect(unfired.isEmpty)
      guard case .replaced = outcome else { throw KeyFailure(outcome) }
      let claims = try mailbox.claimPending()
      #expect(claims.map(\.payloadVersion) == [new], "exchange \(exchange)")
      #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"new\""])
    }
  }
}
