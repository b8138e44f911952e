import AppGroupMailbox
import Foundation
import Glibc

/// Data goes to stdout, diagnostics to stderr, each written whole with write(2) (no buffering,
/// so a line is out before the message it describes is acknowledged).
enum Output {
  /// Writes `text` to stdout. When `stoppable`, a stop signal (``Signals``) ends a write that
  /// waits for a stalled reader: the rest of `text` is not written.
  /// - Throws: ``CommandFailure`` with ``ExitStatus/ioError`` when the write fails (EPIPE,
  ///   ENOSPC, EIO...) or, when `stoppable`, was stopped (EINTR).
  static func data(_ text: String, stoppable: Bool = false) throws(CommandFailure) {
    try write(1, Array(text.utf8), what: "stdout", stoppable: stoppable)
  }

  /// Writes `bytes` to stdout; see ``data(_:)-(String)``.
  static func data(_ bytes: [UInt8]) throws(CommandFailure) {
    try write(1, bytes, what: "stdout")
  }

  /// Writes a diagnostic line `mailboxctl: <text>` to stderr; failures are ignored.
  static func note(_ text: String) {
    try? write(2, Array("mailboxctl: \(text)\n".utf8), what: "stderr")
  }

  /// Writes named counts to stdout: one JSON object of `key`s with `json`, else a `label:`
  /// line each with the values aligned two columns after the longest label.
  static func counts(_ rows: [(key: String, label: String, value: Int)], json: Bool)
    throws(CommandFailure)
  {
    if json {
      var object = JSONObject()
      for row in rows { object.add(row.key, row.value) }
      try data(object.text + "\n")
    } else {
      let column = (rows.map(\.label.count).max() ?? 0) + 2
      try data(
        rows.map {
          $0.label + ":" + String(repeating: " ", count: column - $0.label.count) + "\($0.value)\n"
        }.joined())
    }
  }

  /// Writes `mailboxctl: error: <text>` to stderr, "error" in red when colour is on.
  static func error(_ text: String) {
    let label = useColour ? "\u{1B}[31merror\u{1B}[0m" : "error"
    try? write(2, Array("mailboxctl: \(label): \(text)\n".utf8), what: "stderr")
  }

  /// Writes raw text to stderr (progress lines); failures are ignored.
  static func raw(_ text: String) {
    try? write(2, Array(text.utf8), what: "stderr")
  }

  /// Text from outside shown in a text line: an id or reason a handler wrote, a type tag, a
  /// file name. On one line, at most `limit` characters, control and format characters (a line
  /// break, an escape sequence for the terminal) written as `\u{…}`, so it cannot forge
  /// mailboxctl's lines, drive the terminal, or write much of a message into a log.
  static func shown(_ text: String, limit: Int = 200) -> String {
    var shown = ""
    for scalar in text.unicodeScalars.prefix(limit) {
      switch scalar.properties.generalCategory {
      case .control, .format, .lineSeparator, .paragraphSeparator:
        shown += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      default: shown.unicodeScalars.append(scalar)
      }
    }
    return text.unicodeScalars.count > limit ? shown + "…" : shown
  }

  /// `count` and `noun`, plural with an "s" unless `count` is 1 (`1 message`, `0 files`).
  static func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
  }

  /// Seconds with up to `decimals` decimals (3 by default; 6, the mailbox's microsecond
  /// resolution, for a stored setting), without trailing zeros (`0.4`, `2`, `0.125`).
  static func seconds(_ seconds: TimeInterval, decimals: Int = 3) -> String {
    var text = String(format: "%.\(decimals)f", seconds)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text
  }

  /// Colour only when stderr is a terminal and NO_COLOR is unset or empty
  /// (https://no-color.org).
  static var useColour: Bool {
    isatty(2) == 1 && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
  }

  /// Whether stderr is a terminal (progress lines are shown only then).
  static var stderrIsTerminal: Bool { isatty(2) == 1 }

  private static func write(
    _ fd: Int32, _ bytes: [UInt8], what: String, stoppable: Bool = false
  ) throws(CommandFailure) {
    let code = FileDescriptorWriter.writeAll(
      fd, bytes, until: stoppable ? FileDescriptorWriter.afterStopSignal : { _ in false })
    guard code == 0 else {
      throw CommandFailure(
        .ioError, "writing \(what) failed: \(Errno(rawValue: code).explanation)")
    }
  }
}

/// A JSON object written by hand so keys keep their order and a message's bytes can be
/// embedded as they are.
struct JSONObject {
  private var parts: [String] = []

  mutating func add(_ key: String, _ value: String?) {
    parts.append(JSONText.string(key) + ":" + (value.map(JSONText.string) ?? "null"))
  }

  mutating func add(_ key: String, _ value: Int?) {
    parts.append(JSONText.string(key) + ":" + (value.map(String.init) ?? "null"))
  }

  mutating func add(_ key: String, seconds value: Double?) {
    let text = value.map { String(format: "%.3f", $0) } ?? "null"
    parts.append(JSONText.string(key) + ":" + text)
  }

  mutating func add(_ key: String, _ value: Bool) {
    parts.append(JSONText.string(key) + ":" + (value ? "true" : "false"))
  }

  mutating func add(_ key: String, date: Date?) {
    add(key, date.map(ISO8601.format))
  }

  /// Embeds `json` (one valid JSON value) as it is, with line breaks (only ever whitespace
  /// between tokens in valid JSON) turned into spaces so the object stays on one line.
  mutating func add(_ key: String, rawJSON json: Data) {
    parts.append(JSONText.string(key) + ":" + JSONText.oneLine(json))
  }

  /// The object on one line, without a line break.
  var text: String { "{" + parts.joined(separator: ",") + "}" }
}

/// JSON string quoting (RFC 8259 section 7).
enum JSONText {
  /// `json` (one valid JSON value) as it is, with line breaks (only ever whitespace between
  /// tokens in valid JSON) turned into spaces, so it fits on one line.
  static func oneLine(_ json: Data) -> String {
    String(decoding: json.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 }, as: UTF8.self)
  }

  static func string(_ value: String) -> String {
    var out = "\""
    for scalar in value.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }
}
