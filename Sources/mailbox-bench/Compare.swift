import Foundation

/// `mailbox-bench --compare A B`: how far two runs' ratios are apart, row by row, from the JSON
/// Lines of two `--json` runs (for the `--quick` stability check in docs/PERFORMANCE.md).
enum Compare {
  /// The tolerance the check uses: two runs agree on a ratio when the larger is at most this
  /// much above the smaller.
  static let tolerance = 0.20

  /// One row of both runs: its key and the two ratios.
  struct Pair {
    var key: String
    var first: Double
    var second: Double

    /// The larger ratio over the smaller, minus 1 (0.25: 25 % apart).
    var apart: Double { max(first, second) / min(first, second) - 1 }
  }

  /// The rows with a ratio in both runs, matched by group, measure, durability, size and
  /// baseline, in the first run's order.
  static func pairs(_ first: [[String: Any]], _ second: [[String: Any]]) -> [Pair] {
    func key(_ object: [String: Any]) -> String? {
      guard object["group"] as? String != "target", let ratio = object["ratio"] as? Double,
        ratio > 0
      else { return nil }
      let fields: [Any?] = [
        object["group"], object["measure"], object["durability"], object["size"],
        object["against"],
      ]
      return fields.map { "\($0 ?? "-")" }.joined(separator: " | ")
    }
    var seconds: [String: Double] = [:]
    for object in second { if let key = key(object) { seconds[key] = object["ratio"] as? Double } }
    return first.compactMap { object in
      guard let key = key(object), let a = object["ratio"] as? Double, let b = seconds[key]
      else { return nil }
      return Pair(key: key, first: a, second: b)
    }
  }

  /// Reads one `--json` run (one object a line; lines that are not objects are skipped).
  static func load(_ path: String) throws -> [[String: Any]] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  /// Prints every pair and the count that agree; returns whether all agree.
  static func run(_ first: String, _ second: String) throws -> Bool {
    let pairs = pairs(try load(first), try load(second))
    for pair in pairs {
      let flag = pair.apart > tolerance ? "  apart" : ""
      print(
        Report.pad(pair.key, 70)
          + String(format: "%7.2f %7.2f %5.0f %%", pair.first, pair.second, pair.apart * 100)
          + flag)
    }
    let agree = pairs.filter { $0.apart <= tolerance }.count
    print(
      "\(agree) of \(pairs.count) ratios agree within \(Int(tolerance * 100)) %"
        + " (the larger over the smaller, minus 1)")
    return agree == pairs.count
  }
}
