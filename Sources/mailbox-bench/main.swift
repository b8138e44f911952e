// mailbox-bench: the library against the C system-call floor (Sources/CMailboxBaseline) and, with
// --peers, Python's dirq and mailbox.Maildir. See docs/PERFORMANCE.md.
import Foundation
import Glibc

let arguments = Array(CommandLine.arguments.dropFirst())
do {
  if try Workers.run(arguments) { exit(0) }
} catch {
  FileHandle.standardError.write(Data("mailbox-bench worker: \(error)\n".utf8))
  exit(1)
}
guard let options = BenchOptions(arguments: arguments) else {
  FileHandle.standardError.write(Data((BenchOptions.usage + "\n").utf8))
  exit(64)
}

let started = nowNanoseconds()
let report = Report(json: options.json)
let workspace: Workspace
do {
  workspace = try Workspace(parent: options.directory)
} catch {
  FileHandle.standardError.write(Data("mailbox-bench: \(error)\n".utf8))
  exit(73)
}
defer { workspace.removeAll() }

var failed = false
@MainActor func group(_ name: String, _ body: () throws -> Void) {
  guard options.runs(name) else { return }
  do {
    try body()
  } catch {
    failed = true
    FileHandle.standardError.write(Data("mailbox-bench: \(name): \(error)\n".utf8))
  }
}

if !options.json { print(Machine.describe(base: workspace.base)) }
group("throughput") {
  try ThroughputMeasures(options: options, workspace: workspace, report: report).run()
}
var depth = DepthMeasures(options: options, workspace: workspace, report: report)
group("depth") { try depth.run() }
group("batch") { try BatchMeasure(options: options, workspace: workspace, report: report).run() }
group("concurrency") {
  try ConcurrencyMeasure(options: options, workspace: workspace, report: report).run()
}
group("wake") { try WakeMeasure(options: options, workspace: workspace, report: report).run() }
group("memory") {
  try MemoryMeasure(options: options, workspace: workspace, report: report).run()
}
group("drain") { try DrainMeasure(options: options, workspace: workspace, report: report).run() }
group("bridge") { try BridgeMeasure(options: options, workspace: workspace, report: report).run() }
group("peers") { try PeerMeasures(options: options, workspace: workspace, report: report).run() }
Targets.check(report.rows, claimCost: depth.claimCost, json: options.json)
if !options.json {
  print(String(format: "elapsed %.1f s", Double(nowNanoseconds() - started) / 1e9))
}
workspace.removeAll()
exit(failed ? 1 : 0)
