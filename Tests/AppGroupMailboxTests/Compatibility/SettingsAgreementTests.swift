import Foundation
import Testing

@testable import AppGroupMailbox

/// What the two readers of a settings file make of the spellings where JSON readers differ
/// (docs/FORMAT.md, "The settings file"): the Swift library and interop/python must read the
/// same hold and bounds or refuse the file alike. Before, Swift read a trailing comma that Python
/// refused, read `true` as the number 1 (`"maxMessages":true` bounded the mailbox at one
/// message for Swift only), and Python's reader raised RecursionError on deep nesting.
@Suite struct SettingsAgreementTests {
  /// A settings line with `members` after the ones every file has.
  static func line(format: Int = 1, maxMessages: String = "100", _ members: String = "") -> String {
    #"{"format":\#(format),"maxMessages":\#(maxMessages),"maxPayloadBytes":65536,"#
      + #""largestPayloadBytes":65536,"messageLifetime":86400,"maxQuarantinedFiles":20,"#
      + #""maxDeliveryAttempts":null,"overflowPolicy":"rejectNewest","sharing":"private""#
      + members + "}"
  }

  static let twice = "unreadable: a member name is given twice or is not valid Unicode"
  static let notObject = "unreadable: not one JSON object"

  static let cases: [(line: String, verdict: String)] = [
    (line(), "ok held=false max=100"),
    (line(format: 2, #","held":true"#), "ok held=true max=100"),
    (line(maxMessages: "100.0"), "ok held=false max=100"),
    (line(#","x":{"a":1,"a":2}"#), "ok held=false max=100"),
    (line(format: 2, #","held":true,"held":false"#), twice),
    (line(#","maxMessages":1"#), twice),
    (line(#","\u006daxMessages":1"#), twice),
    (line(#","\udc00":1"#), twice),
    (line(","), notObject),
    (line(#","x":NaN"#), notObject),
    (line(#","x":["\ud800"]"#), notObject),
    (line(#","x":1e400"#), notObject),
    (line(#","x":"\u0000""#), "ok held=false max=100"),
    (
      line(#","x":"# + String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)),
      notObject
    ),
    (line(maxMessages: "true"), "unreadable: 'maxMessages' is missing or of the wrong type"),
    (line(#","messageLifetime":false"#), twice),
    (
      #"{"format":1,"maxMessages":100,"maxPayloadBytes":65536,"messageLifetime":true,"#
        + #""maxQuarantinedFiles":20,"overflowPolicy":"rejectNewest","sharing":"private"}"#,
      "unreadable: 'messageLifetime' is missing or of the wrong type"
    ),
    (line(format: 3), "future 3"),
    // Numbers as the nearest double to their text (found by an adversarial session: Swift read
    // `1.99999999999999999999` as 1, Python as 2, so only Python saw the hold).
    (
      line(format: 2).replacingOccurrences(
        of: #""format":2"#, with: #""format":1.99999999999999999999"#
      )
      .replacingOccurrences(of: "}", with: #","held":true}"#), "ok held=true max=100"
    ),
    (line(maxMessages: "99.99999999999999999"), "ok held=false max=100"),
    (line(#","maxMessages":"# + "1" + String(repeating: "0", count: 400)), twice),
    (
      line().replacingOccurrences(of: "86400", with: "1" + String(repeating: "0", count: 400)),
      notObject
    ),
    (line().replacingOccurrences(of: "86400", with: "1e308"), "ok held=false max=100"),
    (line(#","x":1"# + String(repeating: "0", count: 400)), notObject),
  ]

  /// The Swift reader's verdict on a settings line.
  static func swiftVerdict(_ line: String) -> String {
    let settings: AppGroupMailboxSettings
    do throws(SettingsText.Failure) {
      settings = try SettingsText.decode(Array((line + "\n").utf8)).settings
    } catch {
      switch error {
      case .futureFormat(let format): return "future \(format)"
      case .unreadable(let text): return "unreadable: \(text)"
      }
    }
    return "ok held=\(settings.isHeld) max=\(settings.maxMessages)"
  }

  @Test func `The Swift reader reads or refuses each spelling as docs/FORMAT.md says`() {
    for (line, verdict) in Self.cases {
      #expect(Self.swiftVerdict(line) == verdict, "\(line.prefix(200))")
    }
  }

  @Test(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
  func `interop/python reads or refuses each spelling as the Swift reader does`() throws {
    let program = """
      from agm.errors import SettingsFormatTooNew, SettingsUnreadable
      from agm.settings import Settings
      for line in sys.stdin.buffer.read().split(b"\\n"):
          if not line:
              continue
          try:
              settings = Settings.decode(line + b"\\n")
              settings.lifetime_micros  # what every claim computes (1e308 s raised OverflowError)
              print("ok held=%s max=%d" % ("true" if settings.held else "false",
                                           settings.max_messages))
          except SettingsFormatTooNew as error:
              print("future %d" % error.version)
          except SettingsUnreadable as error:
              print("unreadable: %s" % error)
      """
    let lines = Self.cases.map(\.line)
    let printed = try PythonSpool.lines(
      of: program, stdin: Data(lines.map { $0 + "\n" }.joined().utf8))
    #expect(printed == Self.cases.map(\.verdict))
  }
}
