import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// What drain accepts of a `--coprocess` handler's lines (docs/HANDLER-PROTOCOL.md). Found by
/// an adversarial session: an answer line over 1 MiB that ended inside one read was applied
/// (only the unfinished part was measured), `true`, `1.0` and `1e0` passed for the integer
/// `version` and `true` for `after`, and text from the handler (an id it answered) reached
/// drain's standard error as it was, escape sequences and line breaks included.
@Suite struct CoprocessAnswerTests {
  @Test func `A version is a JSON integer and a retry's after a JSON number`() {
    func greeting(_ version: String) -> Bool {
      let line = #"{"protocol":"mailboxctl-handler","version":\#(version)}"#
      return (try? HandlerProtocol.parseGreeting(Data(line.utf8)).get()) != nil
    }
    #expect(greeting("1"))
    #expect(!greeting("true") && !greeting("1.0") && !greeting("1e0") && !greeting("\"1\""))
    // Past Int's range: refused as the number it is, not wrapped to a negative one.
    func refusal(_ version: String) -> String? {
      let line = #"{"protocol":"mailboxctl-handler","version":\#(version)}"#
      guard case .failure(let fault) = HandlerProtocol.parseGreeting(Data(line.utf8)) else {
        return nil
      }
      return fault.text
    }
    #expect(refusal("2") == "it speaks protocol version 2; this mailboxctl speaks 1")
    #expect(
      refusal("9223372036854775808")
        == "it speaks protocol version 9223372036854775808; this mailboxctl speaks 1")
    #expect(
      refusal("18446744073709551617")
        == "it speaks protocol version 18446744073709551617; this mailboxctl speaks 1")
    #expect(refusal("1.0") == "its greeting has no integer \"version\"")
    func retry(_ after: String) -> Double? {
      let line = #"{"id":"x","action":"retry","after":\#(after)}"#
      guard case .success((_, .retry(let seconds))) = HandlerProtocol.parseAnswer(Data(line.utf8))
      else { return nil }
      return seconds
    }
    #expect(retry("1") == 1 && retry("0.5") == 0.5)
    #expect(retry("true") == nil && retry("false") == nil && retry("\"1\"") == nil)
  }

  /// Found by an adversarial session (stop 35): `{"action":"release","action":"ack"}`
  /// acknowledged (the last name counted, as JSONSerialization reads it; the file formats
  /// refuse a name given twice), a greeting giving `version` twice was read by its last, and a
  /// number past a double's range made an object "not a JSON object".
  @Test func `A line giving a name twice or a number out of range is refused as such`() {
    func answer(_ line: String) -> String? {
      switch HandlerProtocol.parseAnswer(Data(line.utf8)) {
      case .success: return nil
      case .failure(let fault): return fault.text
      }
    }
    let id = #""id":"0b8c2a3e-6f0e-4f5e-9d7e-1b2c3d4e5f60""#
    #expect(
      answer(#"{\#(id),"action":"release","action":"ack"}"#)
        == "a line that gives a member name twice, or one that is not valid Unicode")
    #expect(
      answer(#"{\#(id),"act\u0069on":"ack","action":"ack"}"#)
        == "a line that gives a member name twice, or one that is not valid Unicode")
    #expect(
      answer(#"{\#(id),"action":"retry","after":1e400}"#)
        == "a line that holds what JSON readers refuse: a number past a double's range, a lone "
        + "surrogate escape, or nesting deeper than 512")
    #expect(answer(#"{\#(id),"action":"ack",}"#) == "a line that is not a JSON object")
    #expect(answer(#"[\#(id)]"#) == "a line that is not a JSON object")
    #expect(answer(#"{\#(id),"action":"ack"}"#) == nil)
    #expect(answer(" {\(id),\"action\":\"ack\"}\r") == nil)
    func greeting(_ line: String) -> String? {
      switch HandlerProtocol.parseGreeting(Data(line.utf8)) {
      case .success: return nil
      case .failure(let fault): return fault.text
      }
    }
    for twice in [#""version":1,"version":2"#, #""version":2,"version":1"#] {
      #expect(
        greeting(#"{"protocol":"mailboxctl-handler",\#(twice)}"#)
          == "its greeting gives a member name twice, or one that is not valid Unicode")
    }
    #expect(greeting(#"{"protocol":"mailboxctl-handler","version":1}"#) == nil)
  }

  @Test func `Handler text is shown on one line, escaped and capped`() {
    #expect(
      Output.shown("x\nmailboxctl: FORGED\u{1B}[2J") == #"x\u{A}mailboxctl: FORGED\u{1B}[2J"#)
    #expect(Output.shown("a\u{2028}b\u{200B}") == #"a\u{2028}b\u{200B}"#)
    #expect(
      Output.shown(String(repeating: "é", count: 300)) == String(repeating: "é", count: 200)
        + "…")
  }

  /// A handler that answers its first message with `line` (Python text), then reads to the end.
  func handler(answering line: String, in container: TemporaryContainer) throws -> [String] {
    let body = """
      i = json.loads(sys.stdin.readline())["id"]
      sys.stdout.write(\(line))
      sys.stdout.flush()
      sys.stdin.read()

      """
    return try PythonHandler.greeted(body, in: container)
  }

  @Test func `An answer line over 1 MiB is refused, however it was read`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 1)
    let arguments = try handler(
      answering: #"json.dumps({"id": i, "action": "ack", "pad": "x" * (1 << 20)}) + "\n""#,
      in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--retry-delay", "3600"] + arguments, deadline: 60)
    #expect(result.status == 75, "\(result.stderr)")
    #expect(result.stderr.contains("wrote a line longer than 1048576 bytes"))
    #expect(drainSummary(result.stderr)?.hasPrefix("mailboxctl: drain: delivered 0,") == true)
    #expect(try container.remaining().map(\.id) == ids)
  }

  @Test func `An id the handler does not hold is shown escaped`() throws {
    let container = try TemporaryContainer()
    _ = try container.enqueueNumbered(count: 1)
    let arguments = try handler(
      answering:
        #"json.dumps({"id": "x\nmailboxctl: FORGED\u001b[2J", "action": "ack"}) + "\n" + json.dumps({"id": i, "action": "ack"}) + "\n""#,
      in: container)
    let result = try Mailboxctl.run(["drain"] + container.arguments() + arguments, deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains(#"answered message x\u{A}mailboxctl: forged\u{1B}[2j, which"#))
    #expect(!result.stderr.contains("\u{1B}") && !result.stderr.contains("\nmailboxctl: FORGED"))
    #expect(try container.remaining().isEmpty)
  }
}
