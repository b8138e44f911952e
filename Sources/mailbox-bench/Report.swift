import Foundation

/// Prints measurements as they complete: a table, or JSON Lines with `--json`. The `ratio`
/// column is the median of the rounds' library / baseline ratios, `spread` the lowest and
/// highest of them.
final class Report {
  private let json: Bool
  private(set) var rows: [Measurement] = []

  init(json: Bool) { self.json = json }

  /// Records and prints one measurement.
  func add(_ row: Measurement) {
    rows.append(row)
    if json {
      print(row.json)
    } else {
      if rows.count == 1 { print(Self.header) }
      print(Self.line(row))
    }
    fflush(nil)  // all output streams; names no global (Swift 6 concurrency)
  }

  static let header =
    pad("group", 12) + pad("measure", 34) + pad("dur", 8) + pad("size", 7) + pad("unit", 7)
    + padLeft("library", 11) + padLeft("baseline", 11) + padLeft("ratio", 7) + "  "
    + pad("spread", 11) + "vs  note"

  static func line(_ row: Measurement) -> String {
    let size =
      row.size == 0 ? "-" : row.size >= 1024 ? "\(row.size / 1024)K" : "\(row.size)"
    return pad(row.group, 12) + pad(row.name, 34) + pad(row.durability, 8) + pad(size, 7)
      + pad(row.unit, 7) + padLeft(format(row.library), 11)
      + padLeft(row.baseline == nil ? "-" : format(row.baseline), 11)
      + padLeft(row.ratio.map { String(format: "%.2f", $0) } ?? "-", 7) + "  "
      + pad(row.spread.map { String(format: "%.2f-%.2f", $0.low, $0.high) } ?? "-", 11)
      + pad(row.against, 4) + row.note
  }

  static func format(_ value: Double?) -> String {
    guard let value else { return "pending" }
    if value >= 100 { return String(format: "%.0f", value) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
  }

  static func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
  }

  static func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? " " + text : String(repeating: " ", count: width - text.count) + text
  }
}
