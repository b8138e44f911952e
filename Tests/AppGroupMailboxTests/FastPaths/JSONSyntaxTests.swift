import Foundation
import Testing

@testable import AppGroupMailbox

/// The untyped mailbox's one-pass JSON check (``JSONSyntax``) accepts only what JSONSerialization
/// accepts, and takes the common messages without it.
@Suite struct JSONSyntaxTests {
  static func fast(_ text: String) -> Bool {
    Data(text.utf8).withUnsafeBytes(JSONSyntax.isCertainlyValid)
  }

  static func serialization(_ data: Data) -> Bool {
    (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
  }

  @Test(arguments: [
    #"{"a":[1,2.5,"x\n\u00e9",true,false,null],"b":{}}"#, #""text""#, "0", "-12.5", "[]",
    " [ {\"k\" : \"v\"} ] ", #""caf\#u{e9} \#u{1F600}""#, #""\/\\\"\b\f\r\t""#,
    String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
  ])
  func `Common JSON is certainly valid without JSONSerialization`(_ text: String) {
    #expect(Self.fast(text))
    #expect(Self.serialization(Data(text.utf8)))
  }

  @Test(arguments: [
    "", " ", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "-", "1.", "+1", "[1 2]", "nul", "tru",
    "\"open", "\"\u{1}\"", "{1:2}", "[1]]", "\u{FEFF}1",
    // Left to JSONSerialization: exponents, long numbers, NUL and surrogate escapes, depth.
    "1e5", "1234567890123456", #""\u0000""#, #""\ud83d\ude00""#,
    String(repeating: "[", count: 101) + String(repeating: "]", count: 101),
    // A string left open after a vector step reached the end.
    "\"" + String(repeating: "x", count: 16), "\"" + String(repeating: "x", count: 64),
    "[\"" + String(repeating: "x", count: 79),
  ])
  func `Anything else is not certainly valid`(_ text: String) {
    #expect(!Self.fast(text))
  }

  static func verdict(_ text: String) -> JSONSyntax.Verdict {
    Data(text.utf8).withUnsafeBytes(JSONSyntax.verdict)
  }

  /// Foundation's parsers accept a trailing comma (new-user trial: `mailboxctl enqueue` stored
  /// `{"pw":"x",}`, which a Python handler then failed on at every retry); the grammar does not.
  @Test(arguments: [
    "[1,]", "[1,2,]", "{\"a\":1,}", "{\"pw\":\"x\",}", "[,]", "[,1]", "{,}", "[1,,2]", "{\"a\"}",
    "{\"a\":}", "01", "-", "1.", "+1", "1e", "1e+", ".5", "[1 2]", "nul", "\"open", "{1:2}", "[1]]",
    "\u{FEFF}1", "", " ", "\"\u{1}\"", "[[[1,]]]",
    String(repeating: "[", count: 150) + "1,"
      + String(repeating: "]", count: 150),
  ])
  func `Text the grammar refuses is invalid, however deep, and is never stored`(_ text: String) {
    #expect(Self.verdict(text) == .invalid)
    #expect(!AppGroupRawMailbox.isJSON(Data(text.utf8)))
  }

  @Test(arguments: [
    "1e5", "-1.5E-3", "2e+10", "1234567890123456", #""\u0000x""#, #""\ud83d\ude00""#,
    String(repeating: "[", count: 101) + String(repeating: "]", count: 101),
  ])
  func `Grammatical text only a full parser can judge is unsure, and stored when it parses`(
    _ text: String
  ) {
    #expect(Self.verdict(text) == .unsure)
    #expect(AppGroupRawMailbox.isJSON(Data(text.utf8)) == Self.serialization(Data(text.utf8)))
  }

  /// 20,000 generated valid values, some with exponents, long numbers, surrogate escapes and
  /// deep nesting: the grammar never calls one invalid.
  @Test func `The grammar never refuses a generated valid value`() {
    var random = SeededGenerator(seed: 0x7661_6C69)
    let extras = ["1e5", "-2.5E-7", "12345678901234567", #""\ud83d\ude00""#, "0.0e+0"]
    for round in 0..<20_000 {
      var text = Self.value(&random, depth: 4)
      if round % 3 == 0 { text = "[" + text + "," + extras[round % extras.count] + "]" }
      if round % 1_000 == 0 {
        text = String(repeating: "[", count: 120) + text + String(repeating: "]", count: 120)
      }
      #expect(Self.verdict(text) != .invalid, "\(text)")
    }
  }

  @Test func `Invalid UTF-8 inside a string is not certainly valid`() {
    let bytes: [UInt8] = [0x22, 0xC3, 0x28, 0x22]
    #expect(!bytes.withUnsafeBytes(JSONSyntax.isCertainlyValid))
  }

  /// 20,000 inputs made from JSON pieces and random bytes: whatever the fast check accepts,
  /// JSONSerialization accepts too.
  @Test func `On generated inputs the fast check never accepts what JSONSerialization refuses`() {
    var random = SeededGenerator(seed: 0x4A53_4F4E)
    let pieces = [
      "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"v\"", "1", "0", "-", ".", "5", "e", "true",
      "false", "null", " ", "\\", "\\u", "00e9", "d800", "\\n", "\u{1}", "é", "\u{FEFF}", "01",
    ]
    var accepted = 0
    for _ in 0..<20_000 {
      var bytes: [UInt8] = []
      for _ in 0..<(random.next() % 12) {
        if random.next() % 8 == 0 {
          bytes.append(UInt8(truncatingIfNeeded: random.next()))
        } else {
          bytes += Array(pieces[Int(random.next() % UInt64(pieces.count))].utf8)
        }
      }
      guard bytes.withUnsafeBytes(JSONSyntax.isCertainlyValid) else { continue }
      accepted += 1
      #expect(Self.serialization(Data(bytes)), "\(bytes)")
    }
    #expect(accepted >= 500)
  }

  /// A random JSON value of at most `depth` levels.
  static func value(_ random: inout SeededGenerator, depth: Int) -> String {
    switch random.next() % (depth > 0 ? 8 : 5) {
    case 0: return ["true", "false", "null"][Int(random.next() % 3)]
    case 1: return String(Int64(bitPattern: random.next()) % 100_000)
    case 2: return "\(Double(random.next() % 10_000) / 100)"
    case 3: return #""a\u00e9\n\/é""#
    case 4: return "\"\(random.next() % 1_000)\""
    case 5, 6:
      let count = Int(random.next() % 4)
      let items = (0..<count).map { _ in value(&random, depth: depth - 1) }
      return "[" + items.joined(separator: ",") + "]"
    default:
      let count = Int(random.next() % 4)
      let members = (0..<count).map { index in
        "\"k\(index)\" : " + value(&random, depth: depth - 1)
      }
      return "{ " + members.joined(separator: ", ") + " }"
    }
  }

  /// 20,000 valid values, half of them with one byte changed, inserted or removed: the fast
  /// check takes every valid one it can and never one JSONSerialization refuses.
  @Test func `On mutated JSON values the fast check never accepts what JSONSerialization refuses`()
  {
    var random = SeededGenerator(seed: 0x6D75_7461)
    var acceptedMutants = 0
    for round in 0..<20_000 {
      var bytes = Array(Self.value(&random, depth: 4).utf8)
      if round % 2 == 1, !bytes.isEmpty {
        let at = Int(random.next() % UInt64(bytes.count))
        switch random.next() % 3 {
        case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
        case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
        default: bytes.remove(at: at)
        }
      }
      let fast = bytes.withUnsafeBytes(JSONSyntax.isCertainlyValid)
      if round % 2 == 0 {
        #expect(fast, "\(String(decoding: bytes, as: UTF8.self))")
      } else if fast {
        acceptedMutants += 1
        #expect(Self.serialization(Data(bytes)), "\(bytes)")
      }
    }
    #expect(acceptedMutants >= 1_000)
  }

  /// The string scan takes 64, 16 and 8 bytes at a time: a byte that ends the string or needs a
  /// look (quote, backslash, control character, non-ASCII) is found at every offset of a block,
  /// and the answer is the one JSONSerialization gives.
  @Test func `A long string is judged alike whatever offset its special byte has`() {
    let specials: [[UInt8]] = [
      [0x22], [0x5C, 0x6E], [0x5C, 0x75, 0x30, 0x30, 0x65, 0x39], [0x01], [0x1F], [0x7F],
      [0xC3, 0xA9], [0xC3, 0x28], [0xF0, 0x9F, 0x98, 0x80], [0x5C], [0x5C, 0x71], [0xFF],
    ]
    for special in specials {
      for offset in 0..<140 {
        for tail in [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65] {
          let body =
            Array(repeating: UInt8(ascii: "x"), count: offset) + special
            + Array(repeating: UInt8(ascii: "y"), count: tail)
          let bytes = [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\"")]
          let fast = bytes.withUnsafeBytes(JSONSyntax.isCertainlyValid)
          let serialization = Self.serialization(Data(bytes))
          #expect(!fast || serialization, "accepted what JSONSerialization refuses")
          let valid: [[UInt8]] = [
            [0x5C, 0x6E], [0x5C, 0x75, 0x30, 0x30, 0x65, 0x39], [0x7F], [0xC3, 0xA9],
            [0xF0, 0x9F, 0x98, 0x80],
          ]
          if valid.contains(special) {
            #expect(fast, "refused valid text")
          }
        }
      }
    }
  }

  /// Every byte value at every offset of a 64-byte block and of the 16-byte and 8-byte steps
  /// after it, alone in a string of `x`: the check accepts exactly the printable ASCII bytes
  /// other than a quote and a backslash (a lone quote ends the string early, a lone backslash is
  /// no escape, anything else is a control character or not UTF-8), as JSONSerialization does.
  @Test func `Each byte value is judged exactly at every offset of the vector steps`() {
    for byte in UInt8.min...UInt8.max {
      let expected =
        (0x20...0x7F).contains(byte) && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
      for offset in 0..<100 {
        var body = [UInt8](repeating: UInt8(ascii: "x"), count: 100)
        body[offset] = byte
        let bytes = [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\"")]
        #expect(
          bytes.withUnsafeBytes(JSONSyntax.isCertainlyValid) == expected, "\(byte) at \(offset)")
      }
      let lone = [UInt8(ascii: "\""), byte, UInt8(ascii: "\"")]
      #expect(Self.serialization(Data(lone)) == expected, "JSONSerialization on \(byte)")
    }
  }
}
