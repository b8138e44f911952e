import AppGroupMailbox
import Foundation

/// Peak resident memory of `mailboxctl drain` draining 20,000 messages of 64 KiB (its JSON
/// Lines to /dev/null), from wait4(2)'s `ru_maxrss` of that process.
///
/// `mailboxctl` is started by a small helper process (this executable in role `_peak-rss`), not
/// by the benchmark itself: a posix_spawn(3) child shares its parent's memory until it execs,
/// and the kernel carries that memory's peak into the child's `ru_maxrss` at exec, so a child of
/// the benchmark (which holds the deep spools' names and has just enqueued 1.3 GB) would report
/// the benchmark's peak. The helper's own peak is reported in the note (a floor of the figure).
///
/// `mailboxctl` is looked up next to this executable (build every product with
/// `swift build -c release` first). When it is missing, ``DrainStandIn`` (the library's
/// claim/acknowledge loop in a child process, its own `VmHWM`) is measured instead and the note
/// says so.
struct MemoryMeasure: MeasureGroup {
  let context: BenchContext

  static let size = 65_536

  /// `mailboxctl` next to this executable, if built.
  static var mailboxctl: String? {
    let path = URL(fileURLWithPath: Children.executable).deletingLastPathComponent()
      .appendingPathComponent("mailboxctl").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }

  func run() throws {
    let count = options.quick ? 2_000 : 20_000
    let path = workspace.fresh("lib-drain")
    defer { workspace.remove(path) }
    let side = try LibrarySide(container: path, durability: .relaxed)
    _ = try side.timeEnqueue(count: count, size: Self.size)
    let drained: Int
    let peak: Int
    let what: String
    if let tool = Self.mailboxctl {
      let summary = path + "/summary.json"
      let out = path + "/peak"
      try Children.run(
        [
          "_peak-rss", out, "/dev/null", summary, tool, "drain", "--container", path,
          "--namespace", LibrarySide.namespace, "--max-messages", "10000000",
          "--max-payload-bytes", String(1 << 20), "--relaxed", "--json",
        ])
      let words = try Children.result(out).compactMap { Int($0) }
      guard words.count == 3, words[0] == 0 else {
        throw BenchError.failed("mailboxctl drain exited with \(words.first ?? -1)")
      }
      // The summary is drain's last stderr line; notes may come before it.
      let lines = try String(contentsOfFile: summary, encoding: .utf8).split(separator: "\n")
      let object =
        try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any]
      drained = object?["delivered"] as? Int ?? -1
      peak = words[1]
      what = String(
        format: "mailboxctl drain, JSON Lines to /dev/null; its starter's own peak %.1f MiB",
        Double(words[2]) / 1_048_576)
    } else {
      let out = path + "/drained"
      try Children.run(["_drain-lib", path, out])
      let words = try Children.result(out)
      drained = Int(words.first ?? "") ?? -1
      peak = Int(words.last ?? "") ?? -1
      what = "stand-in loop: mailboxctl not built next to mailbox-bench"
    }
    guard drained == count else {
      throw BenchError.failed("drain delivered \(drained) of \(count)")
    }
    guard try side.mailbox.claimPending(limit: 1).isEmpty else {
      throw BenchError.failed("drain left messages pending")
    }
    report.add(
      Measurement(
        group: "memory", name: "drain \(count) x 64 KiB, peak RSS", durability: "-",
        size: Self.size, unit: "MiB", library: Double(peak) / 1_048_576, baseline: nil,
        against: "-",
        note: "\(what); target < 64 MiB" + (options.quick ? "; --quick uses 2,000" : ""),
        rounds: 1))
  }
}

/// Stand-in for `mailboxctl drain` when it is not built: claims 16 at a time and acknowledges
/// each, until nothing is pending.
enum DrainStandIn {
  static let batch = 16

  /// Drains the bench mailbox in `container`; returns the number drained.
  static func drain(container: String) throws -> Int {
    let side = try LibrarySide(container: container, durability: .relaxed)
    var drained = 0
    while true {
      let claims = try side.mailbox.claimPending(limit: batch)
      if claims.isEmpty { return drained }
      for claim in claims { try claim.acknowledge() }
      drained += claims.count
    }
  }
}
