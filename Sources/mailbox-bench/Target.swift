import Foundation

/// One performance target checked against this run's figures: met, or not met with why and
/// what would meet it.
struct Target {
  /// What is promised, for example `claim+read+ack 256 B >= 0.8 of C (full)`.
  var name: String
  /// This run's figure, with the spread of the rounds' ratios when known.
  var figure: String
  /// true: met; false: not met; nil: pending (a part that is not built yet).
  var met: Bool?
  /// When not met: what limits the figure and what would meet the target.
  var why: String = ""

  var verdict: String { met.map { $0 ? "met" : "NOT met" } ?? "pending" }

  /// A target on `row`'s ratio: at least `bound` (`atLeast`) or at most `bound`. The figure
  /// gives the median ratio and the range of the rounds'; `why` is printed when not met.
  static func ratio(
    _ name: String, _ row: Measurement?, atLeast: Bool = true, _ bound: Double, why: String
  ) -> Target {
    guard let row, let ratio = row.ratio else {
      return Target(
        name: name, figure: "not measured", met: false,
        why: "this run has no figure for it (a group that failed or a peer missing)")
    }
    let met = atLeast ? ratio >= bound : ratio <= bound
    var figure = String(format: "%.2f", ratio)
    if let spread = row.spread {
      figure += String(format: " (rounds %.2f-%.2f)", spread.low, spread.high)
      let straddles =
        atLeast
        ? spread.low < bound && spread.high >= bound
        : spread.low <= bound && spread.high > bound
      if straddles { figure += ", rounds on both sides" }
    }
    return Target(name: name, figure: figure, met: met, why: met ? "" : why)
  }

  /// One line (and a `why:` line when not met) for the table, or one JSON object.
  func printed(json: Bool) -> String {
    if json {
      var object: [String: Any] = [
        "group": "target", "target": name, "figure": figure, "verdict": verdict,
      ]
      if !why.isEmpty { object["why"] = why }
      let data = try? JSONSerialization.data(
        withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
      return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
    let line = "target: \(Report.pad(name, 52)) \(Report.pad(figure, 34)) \(verdict)"
    return why.isEmpty ? line : line + "\n        why: " + why
  }
}
