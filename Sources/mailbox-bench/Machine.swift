import Foundation

/// A one-line description of the machine and the filesystem measured.
enum Machine {
  /// The 1-, 5- and 15-minute load averages (proc(5), /proc/loadavg), for example
  /// `9.71 9.86 8.34`: ratios move with the load when the two sides use the CPU unequally.
  static func load() -> String {
    let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
    return text.split(separator: " ").prefix(3).joined(separator: " ")
  }

  static func describe(base: String) -> String {
    var uts = utsname()
    uname(&uts)
    let release = withUnsafePointer(to: &uts.release) {
      $0.withMemoryRebound(to: CChar.self, capacity: 65) { String(cString: $0) }
    }
    let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
    let model =
      cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
      .map { $0.split(separator: ":", maxSplits: 1).last.map(String.init) ?? "" }?
      .trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
    let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
    var best = ("?", "?", "")
    for line in mounts.split(separator: "\n") {
      let fields = line.split(separator: " ").map(String.init)
      guard fields.count >= 4, base.hasPrefix(fields[1]), fields[1].count >= best.2.count
      else { continue }
      best = (fields[2], fields[3], fields[1])
    }
    return "machine: Linux \(release), \(ProcessInfo.processInfo.activeProcessorCount) CPUs, "
      + "\(model); \(base) on \(best.0) (\(best.1))"
  }
}
