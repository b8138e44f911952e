import AppGroupMailbox
import Foundation

/// The library against what a user would pick instead, 256-byte messages, alternating rounds:
/// Python's `dirq` (QueueSimple) and `mailbox.Maildir`, `persist-queue`'s `SQLiteAckQueue`, and
/// a plain SQLite table used as a queue in WAL mode (``PeerScript``). Each round times `count`
/// enqueues, the claim+read+acknowledge of those messages and `count` full cycles on each side;
/// the ratio is the library's rate over the peer's. dirq and Maildir have no durability setting
/// (dirq never flushes; Maildir flushes each file but not the directory) and are compared with
/// the library's relaxed mode; the SQLite-based peers run at both durabilities.
///
/// Install: `python3 -m venv .venv-peers && .venv-peers/bin/pip install dirq persist-queue`
/// (the benchmark looks for `.venv-peers/bin/python` in the working directory, else `python3`;
/// `--python` overrides). `mailbox` and `sqlite3` are in Python's standard library.
struct PeerMeasures: MeasureGroup {
  let context: BenchContext

  static let size = 256

  /// Each peer with the durabilities it has (true: full) and what it does per message.
  static let peers: [(name: String, durabilities: [Bool], what: String)] = [
    ("dirq", [false], "QueueSimple, never flushes"),
    ("maildir", [false], "mailbox.Maildir, flushes each file"),
    ("persist-queue", [true, false], "SQLiteAckQueue, WAL"),
    ("sqlite", [true, false], "table in WAL mode, UPDATE ... RETURNING"),
  ]

  static let measures = ["enqueue", "claim+read+ack", "full cycle"]

  var python: String {
    if let python = options.python { return python }
    let venv = FileManager.default.currentDirectoryPath + "/.venv-peers/bin/python"
    return FileManager.default.isExecutableFile(atPath: venv) ? venv : "/usr/bin/env"
  }

  var pythonArguments: [String] { python == "/usr/bin/env" ? ["python3"] : [] }

  /// Messages per run.
  func count(durable: Bool) -> Int {
    durable ? (options.quick ? 16 : 100) : (options.quick ? 200 : 2_000)
  }

  func run() throws {
    let scriptPath = workspace.base + "/peer.py"
    try PeerScript.source.write(toFile: scriptPath, atomically: true, encoding: .utf8)
    for peer in Self.peers {
      for durable in peer.durabilities {
        try compare(peer.name, what: peer.what, durable: durable, script: scriptPath)
      }
    }
  }

  /// Alternating rounds of the library and `peer` at one durability; adds three rows.
  private func compare(_ peer: String, what: String, durable: Bool, script: String) throws {
    let count = count(durable: durable)
    let label = durable ? "full" : "relaxed"
    var library: [[Double]] = [[], [], []]
    var peerRates: [[Double]] = [[], [], []]
    var available = true
    try Rounds.interleave(options.roundCount, while: { available }) {
      let path = workspace.fresh("\(peer)-peer")
      defer { workspace.remove(path) }
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
      let out = path + "/result.json"
      let pid = try Children.spawn(
        pythonArguments + [script, peer, path, String(count), String(Self.size), label, out],
        executable: python, stdout: path + "/stdout", stderr: path + "/stderr")
      guard try Children.wait(pid).status == 0,
        let data = FileManager.default.contents(atPath: out),
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Int64]
      else {
        available = false
        return
      }
      for (index, key) in ["enqueue", "consume", "cycle"].enumerated() {
        peerRates[index].append(Rounds.rate(count, object[key] ?? 0))
      }
    } library: {
      let path = workspace.fresh("lib-peer")
      defer { workspace.remove(path) }
      let side = try LibrarySide(container: path, durability: durable ? .full : .relaxed)
      let enqueue = try side.timeEnqueue(count: count, size: Self.size)
      let consume = try side.timeConsume(count: count)
      let cyclePath = workspace.fresh("lib-peer-cycle")
      defer { workspace.remove(cyclePath) }
      let cycle = try LibrarySide(container: cyclePath, durability: durable ? .full : .relaxed)
        .timeCycle(count: count, size: Self.size)
      for (index, nanoseconds) in [enqueue, consume, cycle].enumerated() {
        library[index].append(Rounds.rate(count, nanoseconds))
      }
    }
    for index in 0..<3 {
      let rounds = available ? peerRates[index] : []
      report.add(
        Measurement(
          group: "peers", name: Self.measures[index], durability: label, size: Self.size,
          unit: "msg/s", library: Statistics.median(library[index]),
          baseline: available ? Statistics.median(rounds) : nil, against: peer,
          note: available
            ? "\(count) msgs/run; \(what)"
            : "\(peer) did not run: not installed? (see docs/PERFORMANCE.md)",
          rounds: library[index].count, libraryRounds: available ? library[index] : [],
          baselineRounds: rounds))
    }
  }
}
