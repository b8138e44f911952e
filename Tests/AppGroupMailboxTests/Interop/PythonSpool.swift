import Foundation
import Testing

@testable import AppGroupMailbox

/// Runs the second implementation of the spool protocols, `interop/python/agm_spool.py` (written
/// from docs/FORMAT.md, Python standard library only), as real processes.
enum PythonSpool {
  static let python = URL(fileURLWithPath: "/usr/bin/python3")
  static let script = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("interop/python/agm_spool.py")

  /// Whether python3 is there (scripts/test installs it). Under `CI=true` the tests run anyway
  /// and fail on a missing interpreter instead of being skipped.
  static var available: Bool {
    FileManager.default.isExecutableFile(atPath: python.path)
      || ProcessInfo.processInfo.environment["CI"] == "true"
  }

  /// Starts `agm_spool.py COMMAND CONTAINER jobs arguments...` with `stdin`.
  static func start(
    _ command: String, _ container: TemporaryContainer, _ arguments: [String] = [],
    stdin: Data = Data()
  ) throws -> RunningProcess {
    try Processes.start(
      python, [script.path, command, container.url.path, "jobs"] + arguments, stdin: stdin)
  }

  /// Runs the Python `body` with interop/python's `agm` package importable (and no bytecode
  /// written into the checkout), `stdin` as its input; requires exit status 0 and returns the
  /// lines it printed. For tests that hold the Python reader's verdicts beside the Swift one's.
  static func lines(of body: String, stdin: Data) throws -> [String] {
    let program =
      "import sys\nsys.dont_write_bytecode = True\nsys.path.insert(0, sys.argv[1])\n" + body
    let finished = try Processes.start(
      python, ["-c", program, script.deletingLastPathComponent().path], stdin: stdin
    ).finish()
    try #require(finished.status == 0, "python3 failed: \(finished.stderr)")
    return finished.lines
  }

  /// Runs it to completion and requires exit status 0.
  static func run(
    _ command: String, _ container: TemporaryContainer, _ arguments: [String] = [],
    stdin: Data = Data()
  ) throws -> Finished {
    let finished = try start(command, container, arguments, stdin: stdin).finish()
    try #require(finished.status == 0, "agm_spool.py \(command) failed: \(finished.stderr)")
    return finished
  }

  /// `enqueue --lines` of `messages` (one JSON value each): the ids and outcomes it printed.
  static func enqueue(
    _ messages: [String], into container: TemporaryContainer, _ arguments: [String] = []
  ) throws -> [(id: String, outcome: String)] {
    let input = Data(messages.map { $0 + "\n" }.joined().utf8)
    return try run("enqueue", container, ["--lines"] + arguments, stdin: input).lines.map {
      let words = $0.split(separator: " ")
      return (String(words[0]), String(words[1]))
    }
  }

  /// One message as `drain` and `hold` print it.
  struct Delivered: Equatable {
    var id: String
    var deliveryCount: Int
    var enqueuedAt: Int64
    var messageType: String
    var payloadVersion: Int
    var payload: String
  }

  /// Parses the JSON lines `drain` and `hold` print.
  static func delivered(_ finished: Finished) throws -> [Delivered] {
    try finished.lines.map { line in
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let hex = try #require(object["payloadHex"] as? String)
      var bytes: [UInt8] = []
      var index = hex.startIndex
      while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(try #require(UInt8(hex[index..<next], radix: 16)))
        index = next
      }
      return Delivered(
        id: try #require(object["id"] as? String),
        deliveryCount: try #require(object["deliveryCount"] as? Int),
        enqueuedAt: try #require((object["enqueuedAt"] as? NSNumber)?.int64Value),
        messageType: try #require(object["messageType"] as? String),
        payloadVersion: try #require(object["payloadVersion"] as? Int),
        payload: try #require(String(bytes: bytes, encoding: .utf8)))
    }
  }

  /// Runs `drain` until it delivered something or `deadline` seconds passed.
  static func drainUntilDelivered(
    _ container: TemporaryContainer, _ arguments: [String] = [], deadline: TimeInterval = 30
  ) throws -> [Delivered] {
    var got: [Delivered] = []
    _ = try waitUntil(deadline: deadline) {
      got = try delivered(run("drain", container, arguments))
      return !got.isEmpty
    }
    return got
  }
}

/// Messages whose bytes test the envelope: escapes, non-ASCII text, nesting, every JSON type.
func interopMessages(_ count: Int) -> [String] {
  (0..<count).map { index in
    switch index % 5 {
    case 0: "{\"n\":\(index),\"text\":\"tw\\u00f6 é \\\"q\\\" \\\\ /\"}"
    case 1: "\"message \(index) ✓\""
    case 2: "[\(index),true,null,{\"a\":[1.5,-2e3]}]"
    case 3: "\(index)"
    default: "{\"n\":\(index),\"nested\":{\"list\":[],\"empty\":\"\"}}"
    }
  }
}
