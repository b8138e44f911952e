import Foundation

/// One row of the report: a measure with the library's and the baseline's medians.
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

  /// library / baseline (for rates a value below 1 means slower; for costs above 1 means slower).
  var ratio: Double? {
    guard let library, let baseline, baseline > 0 else { return nil }
    return library / baseline
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
    if !note.isEmpty { object["note"] = note }
    let data = try? JSONSerialization.data(
      withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }
}
