import Foundation

/// A one-line description of the machine and the filesystem measured.
enum Machine {
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
