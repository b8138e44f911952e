import AppGroupMailbox
import CMailboxBaseline
import Foundation

/// Worker roles this executable plays when started by the benchmark itself. Each writes one
/// result line to the file named by its last argument.
enum Workers {
  /// Runs the role named by `arguments[0]` when it is one (returns true), else returns false.
  static func run(_ arguments: [String]) throws -> Bool {
    guard let role = arguments.first, role.hasPrefix("_") else { return false }
    let args = RoleArguments(role: role, values: Array(arguments.dropFirst()))
    switch role {
    case "_produce-lib":
      // container durability count size go out
      let side = try LibrarySide(container: try args[0], durability: durability(try args[1]))
      let late = Children.sleep(until: try args.int64(4))
      _ = try side.timeEnqueue(count: try args.int(2), size: try args.int(3))
      try Children.report(
        try args[5], [String(nowNanoseconds()), try args[2], late ? "late" : "ok"])
    case "_consume-lib":
      // container durability done go out
      let side = try LibrarySide(container: try args[0], durability: durability(try args[1]))
      let late = Children.sleep(until: try args.int64(3))
      let count = try side.consumeUntil(donePath: try args[2])
      try Children.report(
        try args[4], [String(nowNanoseconds()), String(count), late ? "late" : "ok"])
    case "_produce-c":
      // root durable count size go out
      let side = try BaselineSide(root: try args[0], durable: try args[1] == "full")
      let late = Children.sleep(until: try args.int64(4))
      _ = try side.timeEnqueue(count: try args.int(2), size: try args.int(3))
      try Children.report(
        try args[5], [String(nowNanoseconds()), try args[2], late ? "late" : "ok"])
    case "_consume-c":
      // root done go out
      let side = try BaselineSide(root: try args[0], durable: false)
      let late = Children.sleep(until: try args.int64(2))
      let count = cbaseline_consume_until(side.spool, try args[1])
      guard count >= 0 else { throw BenchError.failed("C consumer") }
      try Children.report(
        try args[3], [String(nowNanoseconds()), String(count), late ? "late" : "ok"])
    case "_wake-c":
      // root samples out
      let samples = try args.int(1)
      var latencies = [Int64](repeating: 0, count: samples)
      let got = cbaseline_wake_consume(try args[0], samples, &latencies)
      guard got >= 0 else { throw BenchError.failed("C wake consumer") }
      try Children.report(try args[2], latencies.prefix(got).map(String.init))
    case "_wake-lib":
      // container samples ready out
      try LibraryWake.consume(
        container: try args[0], samples: try args.int(1), readyPath: try args[2], out: try args[3])
    case "_profile":
      try ProfileRole.run(args)
    case "_peak-rss":
      // out stdout stderr executable arguments...: runs the program from this small process
      // (see MemoryMeasure) and reports its exit status, its ru_maxrss and this helper's own
      // VmHWM (a floor of the figure: posix_spawn's child counts its parent's peak until exec).
      let pid = try Children.spawn(
        try args.from(4), executable: try args[3], stdout: try args[1], stderr: try args[2])
      let (status, peak) = try Children.wait(pid)
      try Children.report(
        try args[0], [String(status), String(peak), String(Children.peakResidentBytes())])
    case "_drain-lib":
      // container out
      let count = try DrainStandIn.drain(container: try args[0])
      try Children.report(try args[1], [String(count), String(Children.peakResidentBytes())])
    default:
      throw BenchError.setup("unknown worker role \(role)")
    }
    return true
  }

  static func durability(_ text: String) -> AppGroupMailbox<String>.Durability {
    text == "full" ? .full : .relaxed
  }
}
