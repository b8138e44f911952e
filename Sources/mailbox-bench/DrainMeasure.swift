import AppGroupMailbox
import Foundation
import Glibc

/// `mailboxctl drain` with a real handler: the same Python one-liner (it parses each message
/// with `json.loads`) run once per message (`--exec`) and as a long-running handler
/// (`--coprocess`, at `--jobs` 1 and 16), beside the library's own claim+acknowledge rate (one
/// claim per call), at both durabilities. Each row's baseline is that library rate, so its ratio
/// is the share of it drain reaches. Each drain run is timed from its start (handler start-up
/// included) to its exit, in a fresh mailbox filled beforehand.
struct DrainMeasure: MeasureGroup {
  let context: BenchContext

  /// The `--exec` handler: reads the message from stdin and parses it.
  static let execHandler = ["python3", "-c", "import json, sys; json.load(sys.stdin)"]

  /// The `--coprocess` handler: answers the greeting, then parses each message and acks it.
  static let coprocessHandler = [
    "python3", "-c",
    """
    import json, sys
    sys.stdin.readline()
    print(json.dumps({"protocol": "mailboxctl-handler", "version": 1}), flush=True)
    for line in sys.stdin:
        m = json.loads(line)
        print(json.dumps({"id": m["id"], "action": "ack"}), flush=True)
    """,
  ]

  func run() throws {
    guard let mailboxctl = MemoryMeasure.mailboxctl else {
      throw BenchError.setup("mailboxctl is not built next to mailbox-bench")
    }
    for durable in [true, false] {
      let label = durable ? "full" : "relaxed"
      let many = durable ? (options.quick ? 300 : 3_000) : (options.quick ? 2_000 : 15_000)
      let few = options.quick ? 10 : 30
      let variants: [(String, Int, [String])] = [
        ("drain --exec python (jobs 1)", few, ["--exec"] + Self.execHandler),
        ("drain --coprocess python (jobs 1)", many, ["--coprocess"] + Self.coprocessHandler),
        (
          "drain --coprocess python (jobs 16)", many,
          ["--jobs", "16", "--coprocess"] + Self.coprocessHandler
        ),
      ]
      var execRate: Double?
      for (name, count, handler) in variants {
        let rates = try Rounds.alternate(options.roundCount) {
          try libraryRate(count: count, durable: durable)
        } library: {
          try drainRate(mailboxctl, count: count, durable: durable, handler: handler)
        }
        var note = "\(count) msgs/run; baseline: library claim+ack, one claim per call"
        let library = Statistics.median(rates.library)
        if let execRate, execRate > 0 {
          note += String(format: "; %.0f x --exec", library / execRate)
        } else {
          execRate = library
        }
        report.add(
          Measurement(
            group: "drain", name: name, durability: label, size: 256, unit: "msg/s",
            library: library, baseline: Statistics.median(rates.baseline), against: "lib",
            note: note, rounds: rates.library.count, libraryRounds: rates.library,
            baselineRounds: rates.baseline))
      }
    }
  }

  /// A fresh mailbox holding `count` messages of 256 bytes.
  private func filled(count: Int) throws -> String {
    let path = workspace.fresh("drain")
    _ = try LibrarySide(container: path, durability: .relaxed).timeEnqueue(count: count, size: 256)
    return path
  }

  /// The library's claim+acknowledge rate over `count` messages.
  private func libraryRate(count: Int, durable: Bool) throws -> Double {
    let path = try filled(count: count)
    defer { workspace.remove(path) }
    let side = try LibrarySide(container: path, durability: durable ? .full : .relaxed)
    return Rounds.rate(count, try side.timeConsume(count: count))
  }

  /// Drain's rate over `count` messages with `handler`; every message must be delivered.
  func drainRate(_ mailboxctl: String, count: Int, durable: Bool, handler: [String])
    throws -> Double
  {
    let path = try filled(count: count)
    defer { workspace.remove(path) }
    let arguments =
      ["drain", "--container", path, "--namespace", LibrarySide.namespace]
      + (durable ? [] : ["--relaxed"]) + ["--max-messages", "10000000"] + handler
    let start = nowNanoseconds()
    let (status, _) = try Children.wait(
      try Children.spawn(arguments, executable: mailboxctl, stderr: "/dev/null"))
    let elapsed = nowNanoseconds() - start
    guard status == 0 else { throw BenchError.failed("mailboxctl drain exited with \(status)") }
    let left = try LibrarySide(container: path, durability: .relaxed).mailbox.inspector.status()
    guard left.pending == 0, left.claimed == 0, left.delayed == 0 else {
      throw BenchError.failed("mailboxctl drain left messages behind")
    }
    return Rounds.rate(count, elapsed)
  }
}

extension DrainMeasure {
  /// The drain targets, per durability: `--coprocess` (jobs 16) at least 50 times `--exec`
  /// and at least half of the library's own claim+acknowledge.
  static func targets(_ rows: [Measurement]) -> [Target] {
    var targets: [Target] = []
    for durability in ["full", "relaxed"] {
      func drain(_ name: String) -> Measurement? {
        rows.first { $0.group == "drain" && $0.name == name && $0.durability == durability }
      }
      guard let exec = drain("drain --exec python (jobs 1)")?.library,
        let long = drain("drain --coprocess python (jobs 16)"), let rate = long.library
      else { continue }
      let times = rate / max(exec, 0.001)
      targets.append(
        Target(
          name: "drain --coprocess >= 50 x --exec (\(durability))",
          figure: String(format: "%.0f x", times), met: times >= 50,
          why: times >= 50 ? "" : "a Python start per message is the whole --exec cost"))
      targets.append(
        .ratio(
          "drain --coprocess >= 0.5 of claim+ack (\(durability))", long, 0.5,
          why: "round trips between drain and the handler; see \"Drain with a handler\""))
    }
    return targets
  }
}
