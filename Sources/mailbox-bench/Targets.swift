import Foundation

/// The performance targets (docs/PERFORMANCE.md, "Targets"), checked against the figures of this run.
enum Targets {
  static func check(_ rows: [Measurement], claimCost: [Int: Double], json: Bool) {
    func ratio(_ name: String, _ durability: String) -> Double? {
      rows.first {
        $0.group == "throughput" && $0.name == name && $0.durability == durability
          && $0.size == 256
      }?.ratio
    }
    func value(_ group: String, _ prefix: String) -> Double? {
      rows.first { $0.group == group && $0.name.hasPrefix(prefix) }?.library
    }
    var lines: [(String, String, Bool?)] = []
    if let r = ratio("full cycle", "full") {
      lines.append(
        ("full cycle, default durability >= 0.85 of C", String(format: "%.2f", r), r >= 0.85))
    }
    if let r = ratio("full cycle", "relaxed") {
      lines.append(
        ("full cycle, relaxed durability >= 0.7 of C", String(format: "%.2f", r), r >= 0.7))
    }
    if let deep = claimCost[100_000], let shallow = claimCost[100], shallow > 0 {
      let r = deep / shallow
      lines.append(
        ("claim cost @100,000 <= 2 x @100 (relaxed)", String(format: "%.2f x", r), r <= 2))
    }
    if rows.contains(where: { $0.group == "wake" }) {
      let p50 = value("wake", "enqueue -> wake in other process p50")
      let p99 = value("wake", "enqueue -> wake in other process p99")
      if let p50, let p99 {
        lines.append(
          (
            "wake-up p50 < 1 ms, p99 < 5 ms", String(format: "%.0f / %.0f us", p50, p99),
            p50 < 1_000 && p99 < 5_000
          ))
        let c50 = rows.first { $0.group == "wake" && $0.name.hasSuffix("p50") }?.baseline ?? 0
        let c99 = rows.first { $0.group == "wake" && $0.name.hasSuffix("p99") }?.baseline ?? 0
        lines.append(
          (
            "wake-up goal: within 2 x the C inotify loop",
            String(format: "%.1f x / %.1f x", p50 / max(c50, 1), p99 / max(c99, 1)),
            p50 <= 2 * c50 && p99 <= 2 * c99
          ))
      } else {
        lines.append(("wake-up p50 < 1 ms, p99 < 5 ms", "pending (watcher)", nil))
      }
    }
    if let peak = value("memory", "drain") {
      lines.append(
        ("drain 20,000 x 64 KiB peak RSS < 64 MiB", String(format: "%.1f MiB", peak), peak < 64))
    }
    for durability in ["full", "relaxed"] {
      func drain(_ name: String) -> Measurement? {
        rows.first { $0.group == "drain" && $0.name == name && $0.durability == durability }
      }
      guard let exec = drain("drain --exec python (jobs 1)")?.library,
        let long = drain("drain --coprocess python (jobs 16)"), let rate = long.library
      else { continue }
      let times = rate / max(exec, 0.001)
      lines.append(
        (
          "drain --coprocess >= 50 x --exec (\(durability))", String(format: "%.0f x", times),
          times >= 50
        ))
      if let share = long.ratio {
        lines.append(
          (
            "drain --coprocess >= 0.5 of claim+ack (\(durability))",
            String(format: "%.2f", share), share >= 0.5
          ))
      }
    }
    lines += BridgeMeasure.targets(rows)
    for (name, figure, met) in lines {
      let verdict = met.map { $0 ? "met" : "NOT met" } ?? "pending"
      if json {
        let object: [String: Any] = [
          "group": "target", "target": name, "figure": figure, "verdict": verdict,
        ]
        if let data = try? JSONSerialization.data(
          withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        {
          print(String(decoding: data, as: UTF8.self))
        }
      } else {
        print("target: \(Report.pad(name, 46)) \(Report.pad(figure, 20)) \(verdict)")
      }
    }
  }
}
