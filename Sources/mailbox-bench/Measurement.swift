import Foundation

/// One row of the report: a measure with the library's and the baseline's medians, and the
/// ratio of the two sides round by round.
struct Measurement {
  /// Group, for example `throughput` or `depth`.
  var group: String
  /// What was measured, for example `full cycle`.
  var name: String
  /// `full`, `relaxed` or `-`.
  var durability: String
  /// Message size in bytes (0 when not applicable).
  var size: Int
  /// Unit of the two values: `msg/s`, `us/op`, `us`, `MiB`.
  var unit: String
  /// The library's median (nil when not measured: see `note`).
  var library: Double?
  /// The baseline's median (nil when there is none).
  var baseline: Double?
  /// Who the baseline is: `C` or a peer name.
  var against: String = "C"
  /// Free text: caveats, stand-ins, pending parts.
  var note: String = ""
  /// Rounds behind each median.
  var rounds: Int = 0
  /// The library's value in each round, in `unit` (empty when only the medians are known).
  var libraryRounds: [Double] = []
  /// The baseline's value in each round, in `unit`, in the same order as `libraryRounds`: the
  /// two sides of round `i` ran back to back.
  var baselineRounds: [Double] = []

  /// A msg/s row from each round's rates on both sides: their medians, and the rounds behind the
  /// ratio and its spread.
  static func rates(
    _ rates: Paired, group: String, name: String, durable: Bool, size: Int,
    against: String = "C", note: String
  ) -> Measurement {
    Measurement(
      group: group, name: name, durability: durable ? "full" : "relaxed", size: size,
      unit: "msg/s", library: Statistics.median(rates.library),
      baseline: Statistics.median(rates.baseline), against: against, note: note,
      rounds: rates.library.count, libraryRounds: rates.library, baselineRounds: rates.baseline)
  }

  /// library / baseline of each round whose two sides were both measured.
  var roundRatios: [Double] {
    zip(libraryRounds, baselineRounds).compactMap { $1 > 0 ? $0 / $1 : nil }
  }

  /// library / baseline (for rates a value below 1 means slower; for costs above 1 means
  /// slower): the median of the rounds' ratios when the rounds are known (each round's two
  /// sides ran back to back under the same load), else the ratio of the medians.
  var ratio: Double? {
    let ratios = roundRatios
    if !ratios.isEmpty { return Statistics.median(ratios) }
    guard let library, let baseline, baseline > 0 else { return nil }
    return library / baseline
  }

  /// The lowest and highest ratio of a single round; nil without rounds.
  var spread: (low: Double, high: Double)? {
    let ratios = roundRatios
    guard let low = ratios.min(), let high = ratios.max() else { return nil }
    return (low, high)
  }

  /// The JSON object for `--json` (one line).
  var json: String {
    var object: [String: Any] = [
      "group": group, "measure": name, "durability": durability, "size": size, "unit": unit,
      "against": against, "rounds": rounds,
    ]
    if let library { object["library"] = library }
    if let baseline { object["baseline"] = baseline }
    if let ratio { object["ratio"] = ratio }
    if let spread {
      object["ratio_min"] = spread.low
      object["ratio_max"] = spread.high
      object["library_rounds"] = libraryRounds
      object["baseline_rounds"] = baselineRounds
    }
    if !note.isEmpty { object["note"] = note }
    let data = try? JSONSerialization.data(
      withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }
}
