import Foundation
import Testing

@testable import AppGroupMailbox

/// What the two readers of a header line make of the spellings where JSON readers differ
/// (docs/FORMAT.md, "Message files"): the Swift reader (its `JSONDecoder` path; the fast path
/// answers only for the form writers write) and interop/python's. Before, Swift took the first
/// of two same-named members and Python the last, Swift read `1.0` as the integer 1 and a
/// trailing comma as nothing, Python delivered `"key":5`: a file one consumer quarantined another
/// delivered, or the two read different ids from it.
@Suite struct HeaderAgreementTests {
  static let id = "3f2a0000-0000-4000-8000-000000000001"

  /// A header line of format 1 with `members` after the required ones.
  static func line(
    format: String = "1", enqueuedAt: String = "5", id: String = id, _ members: String = ""
  ) -> String {
    #"{"enqueuedAt":\#(enqueuedAt),"format":\#(format),"id":"\#(id)","messageType":"Job""#
      + members + "}"
  }

  static func nested(_ depth: Int) -> String {
    #","x":"# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
  }

  static let cases: [(line: String, verdict: String)] = [
    (line(), "ok"),
    (line(#","key":"k""#), "ok"),
    (line(enqueuedAt: "-5"), "ok"),
    (line(id: id.uppercased()), "ok"),
    (#"{ "enqueuedAt" : 5 , "format" : 1 , "id" : "\#(id)" , "messageType" : "Job" }"#, "ok"),
    (line(#","x":"\ud800""#), "ok"),
    (line(#","x":{"a":1,"a":2}"#), "ok"),
    (line(#","\#u{e9}":1,"e\#u{301}":2"#), "ok"),
    (line(#","x":1e400"#), "ok"),
    (line(nested(511)), "ok"),
    (line(format: "1.0"), "malformed"),
    (line(format: "1e0"), "malformed"),
    (line(format: "true"), "malformed"),
    (line(format: "9223372036854775808"), "malformed"),
    (line(enqueuedAt: "5.0"), "malformed"),
    (line(enqueuedAt: "5e0"), "malformed"),
    (line(enqueuedAt: "9223372036854775808"), "malformed"),
    (line(#","payloadVersion":2.0"#), "malformed"),
    (line(#","format":1"#), "malformed"),
    (line(#","id":"3f2a0000-0000-4000-8000-000000000002""#), "malformed"),
    (line(#","form\u0061t":1"#), "malformed"),
    (line(","), "malformed"),
    (line(#","x":[1,]"#), "malformed"),
    (line(#","x":NaN"#), "malformed"),
    (line(#","x":-Infinity"#), "malformed"),
    (line(#","key":5"#), "malformed"),
    (line(#","key":null"#), "malformed"),
    (#"{"enqueuedAt":5,"format":1,"id":"\#(id)","messageType":"\ud800"}"#, "malformed"),
    (line(#","\ud800":1"#), "malformed"),
    (line(nested(512)), "malformed"),
    (line(nested(1000)), "malformed"),
    (#"[{"enqueuedAt":5,"format":1,"id":"\#(id)","messageType":"Job"}]"#, "malformed"),
    (line(format: "2", enqueuedAt: "1.5"), "future"),
    (line(format: "2.0"), "malformed"),
  ]

  /// The Swift reader's verdict on a header line.
  static func swiftVerdict(_ line: String) -> String {
    do {
      _ = try Envelope.decode(Array((line + "\nP").utf8))
      return "ok"
    } catch .futureFormat {
      return "future"
    } catch {
      return "malformed"
    }
  }

  @Test func `The Swift reader judges each spelling as docs/FORMAT.md says`() {
    for (line, verdict) in Self.cases {
      #expect(Self.swiftVerdict(line) == verdict, "\(line.prefix(120))")
    }
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python judges each spelling as the Swift reader does`() throws {
    let program = """
      from agm import envelope
      for line in sys.stdin.buffer.read().split(b"\\n"):
          if not line:
              continue
          try:
              envelope.decode_header(line + b"\\nP")
              print("ok")
          except ValueError as error:
              print(error)
      """
    let lines = Self.cases.map(\.line)
    let printed = try PythonSpool.lines(
      of: program, stdin: Data(lines.map { $0 + "\n" }.joined().utf8))
    #expect(printed == Self.cases.map(\.verdict))
  }
}
