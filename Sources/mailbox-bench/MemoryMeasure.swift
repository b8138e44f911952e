import AppGroupMailbox
import Foundation

/// Peak resident memory, from wait4(2)'s `ru_maxrss` of a `mailboxctl drain` process:
///
/// - draining 20,000 messages of 64 KiB (its JSON Lines to /dev/null);
/// - a fresh consumer at depth: `drain --limit 1` on the 100,000-message spool of the depth
///   measures against the same on a mailbox holding one message. The difference over 100,000
///   is what the consumer's index of pending names (and whatever else grows with the depth,
///   such as the first counter check's listings) costs per message; target 100 bytes, so at
///   most 10 MiB above the shallow mailbox.
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
/// says so, and the depth rows are left out.
struct MemoryMeasure: MeasureGroup {
  let context: BenchContext

  static let size = 65_536
  static let depth = 100_000
  /// Bytes a message the pending index may cost at depth (issue 15).
  static let bytesPerMessageTarget = 100.0

  /// `mailboxctl` next to this executable, if built.
  static var mailboxctl: String? {
    let path = URL(fileURLWithPath: Children.executable).deletingLastPathComponent()
      .appendingPathComponent("mailboxctl").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }

  func run() throws {
    try drainPeak()
    if let tool = Self.mailboxctl { try depthPeak(tool) }
  }

  /// What one `mailboxctl drain` run reported: delivered count, its peak and the helper's.
  private struct Drained {
    var delivered: Int
    var peak: Int
    var helperPeak: Int
  }

  /// Runs `mailboxctl drain --relaxed --json` with `arguments` on the bench mailbox in
  /// `container` from a `_peak-rss` helper; its summary (the last line on stderr) is parsed.
  private func drain(_ tool: String, container: String, _ arguments: [String]) throws -> Drained {
    let summary = workspace.fresh("drain-summary")
    try FileManager.default.createDirectory(atPath: summary, withIntermediateDirectories: true)
    defer { workspace.remove(summary) }
    let out = summary + "/peak"
    try Children.run(
      [
        "_peak-rss", out, "/dev/null", summary + "/summary.json", tool, "drain", "--container",
        container, "--namespace", LibrarySide.namespace, "--relaxed", "--json",
      ] + arguments)
    let words = try Children.result(out).compactMap { Int($0) }
    guard words.count == 3, words[0] == 0 else {
      throw BenchError.failed("mailboxctl drain exited with \(words.first ?? -1)")
    }
    // Notes (such as a deprecation) may come before the summary line.
    let text = try String(contentsOfFile: summary + "/summary.json", encoding: .utf8)
    let last = text.split(separator: "\n").last.map(String.init) ?? ""
    let object = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
    return Drained(
      delivered: object?["delivered"] as? Int ?? -1, peak: words[1], helperPeak: words[2])
  }

  /// The drain of 20,000 messages of 64 KiB.
  private func drainPeak() throws {
    let count = options.quick ? 2_000 : 20_000
    let path = workspace.fresh("lib-drain")
    defer { workspace.remove(path) }
    let side = try LibrarySide(container: path, durability: .relaxed)
    _ = try side.timeEnqueue(count: count, size: Self.size)
    let drained: Int
    let peak: Int
    let what: String
    if let tool = Self.mailboxctl {
      let run = try drain(tool, container: path, [])
      drained = run.delivered
      peak = run.peak
      what = String(
        format: "mailboxctl drain, JSON Lines to /dev/null; its starter's own peak %.1f MiB",
        Double(run.helperPeak) / 1_048_576)
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

  /// A fresh consumer's first claim at depth 100,000 against the same at depth 1: the peak
  /// resident memory of each, and the difference per pending message. Uses the depth measures'
  /// deep spool (256 B messages) and puts back the message it drained.
  private func depthPeak(_ tool: String) throws {
    let size = DepthMeasures.size
    let (_, deep) = try DeepSpools.prepare(
      depth: Self.depth, size: size, cache: options.cacheDirectory)
    let shallow = workspace.fresh("lib-shallow")
    defer { workspace.remove(shallow) }
    _ = try LibrarySide(container: shallow, durability: .relaxed).timeEnqueue(
      count: 1, size: size)
    var deepPeaks: [Int] = []
    var shallowPeaks: [Int] = []
    for _ in 0..<(options.quick ? 1 : 3) {
      let atDepth = try drain(tool, container: deep, ["--limit", "1"])
      _ = try LibrarySide(container: deep, durability: .relaxed).timeEnqueue(
        count: 1, size: size)
      let atOne = try drain(tool, container: shallow, ["--limit", "1"])
      _ = try LibrarySide(container: shallow, durability: .relaxed).timeEnqueue(
        count: 1, size: size)
      guard atDepth.delivered == 1, atOne.delivered == 1 else {
        throw BenchError.failed(
          "drain --limit 1 delivered \(atDepth.delivered), \(atOne.delivered)")
      }
      deepPeaks.append(atDepth.peak)
      shallowPeaks.append(atOne.peak)
    }
    let deepPeak = Statistics.median(deepPeaks.map(Double.init))
    let shallowPeak = Statistics.median(shallowPeaks.map(Double.init))
    let above = deepPeak - shallowPeak
    let perMessage = above / Double(Self.depth)
    let rounds = deepPeaks.count
    report.add(
      Measurement(
        group: "memory", name: "fresh consumer, claim 1 @\(Self.depth), peak RSS",
        durability: "relaxed", size: size, unit: "MiB", library: deepPeak / 1_048_576,
        baseline: shallowPeak / 1_048_576, against: "lib @1",
        note: String(
          format: "mailboxctl drain --limit 1; %.1f MiB above one message pending; target <= 10",
          above / 1_048_576),
        rounds: rounds))
    report.add(
      Measurement(
        group: "memory", name: "pending index @\(Self.depth), per message", durability: "relaxed",
        size: size, unit: "B/msg", library: perMessage, baseline: nil, against: "-",
        note: "(peak @\(Self.depth) - peak @1) / \(Self.depth); target <= "
          + "\(Int(Self.bytesPerMessageTarget)): "
          + (perMessage <= Self.bytesPerMessageTarget ? "met" : "NOT met"),
        rounds: rounds))
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
