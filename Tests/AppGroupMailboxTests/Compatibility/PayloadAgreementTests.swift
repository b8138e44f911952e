import Foundation
import Testing

@testable import AppGroupMailbox

/// What the untyped readers make of a message (docs/FORMAT.md, "Message files"): the Swift
/// library's `AppGroupRawMailbox.isJSON` (which enqueue and an untyped claim both use) and
/// interop/python's `is_json` deliver or quarantine the same messages. Before, an untyped Swift
/// claim delivered what JSONSerialization accepts (a trailing comma, UTF-16), which enqueue
/// refused and `mailboxctl drain` could not embed in its UTF-8 line, while Python delivered
/// `NaN`, a lone surrogate and `1e400`, and crashed (RecursionError) on deep nesting.
@Suite struct PayloadAgreementTests {
  /// The first 306 digits of the halfway point between the largest double and 2^1024.
  static let doubleMaxDigits =
    "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017"
    + "977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273"
    + "854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704"
    + "342711559699508093042880177904174497"

  static let cases: [(bytes: [UInt8], delivered: Bool)] = [
    (Array(#"{"a":[1,2.5,-0,1e5,"x"]}"#.utf8), true),
    (Array(#""\u0000""#.utf8), true),
    (Array(#""\ud83d\ude00""#.utf8), true),
    (Array(#"{"a":1,"a":2}"#.utf8), true),
    (Array("123456789012345678901234567890".utf8), true),
    (Array("1e308".utf8), true),
    (Array("1e-400".utf8), true),
    (Array((String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8), true),
    (Array(" 1 ".utf8), true),
    // Integers as wide as a double reaches: the largest that rounds to a finite one, then the
    // first that rounds to infinity (found by an adversarial session: Python delivered it).
    (Array(("1" + String(repeating: "0", count: 308)).utf8), true),
    (Array(("-1" + String(repeating: "0", count: 309)).utf8), false),
    (Array((Self.doubleMaxDigits + "791").utf8), true),
    (Array((Self.doubleMaxDigits + "792").utf8), false),
    (Array("[1,]".utf8), false),
    (Array(#"{"pw":"x",}"#.utf8), false),
    (Array("NaN".utf8), false),
    (Array("[-Infinity]".utf8), false),
    (Array(#"["\ud800"]"#.utf8), false),
    (Array("1e400".utf8), false),
    (Array("-1e309".utf8), false),
    (Array((String(repeating: "[", count: 513) + String(repeating: "]", count: 513)).utf8), false),
    (
      Array((String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)).utf8), false
    ),
    ([0xFF, 0xFE, 0x31, 0x00], false),  // UTF-16LE with a byte order mark: "1"
    ([0x31, 0x00], false),  // UTF-16LE without one
    ([0xEF, 0xBB, 0xBF, 0x31], false),  // UTF-8 with a byte order mark
    ([0x22, 0xC3, 0x28, 0x22], false),  // invalid UTF-8 in a string
    (Array("".utf8), false),
  ]

  /// One hex line a case (a leading "x" keeps an empty payload's line), for the Python side.
  static let hexLines = cases.map {
    "x" + $0.bytes.map { String(format: "%02x", $0) }.joined() + "\n"
  }.joined()

  @Test func `The Swift library delivers exactly the JSON it stores`() {
    for (bytes, delivered) in Self.cases {
      #expect(AppGroupRawMailbox.isJSON(Data(bytes)) == delivered, "\(bytes.prefix(40))")
    }
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python delivers the same messages as the Swift library`() throws {
    let program = """
      from agm import envelope
      for line in sys.stdin.read().split("\\n"):
          if line:
              print(envelope.is_json(bytes.fromhex(line[1:])))
      """
    let printed = try PythonSpool.lines(of: program, stdin: Data(Self.hexLines.utf8))
    #expect(printed == Self.cases.map { $0.delivered ? "True" : "False" })
  }

  /// Producers write what consumers deliver: interop/python's producer wrote any bytes it was
  /// given, so a Python producer could publish a message every consumer then quarantined.
  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python enqueues exactly what the Swift enqueue stores`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100))
    let program = """
      from agm import NotJSON, Spool
      lines = sys.stdin.read().split("\\n")
      spool = Spool(lines[0], "jobs", max_messages=100, durable=False)
      for line in lines[1:]:
          if line:
              try:
                  print(spool.enqueue(bytes.fromhex(line[1:]))[1])
              except NotJSON:
                  print("not-json")
      """
    let input = Data((container.url.path + "\n" + Self.hexLines).utf8)
    let printed = try PythonSpool.lines(of: program, stdin: input)
    #expect(printed == Self.cases.map { $0.delivered ? "published" : "not-json" })
    for (bytes, delivered) in Self.cases {
      #expect(
        ((try? mailbox.enqueue(Data(bytes))) != nil) == delivered, "Swift: \(bytes.prefix(40))")
    }
    // What the Python producer published, an untyped Swift consumer delivers, byte for byte.
    let delivered = try mailbox.claimPending()
    let stored = Self.cases.filter(\.delivered).map(\.bytes)
    #expect(delivered.map { Array($0.payload) } == stored + stored)
  }
}
