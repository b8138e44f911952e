// mailbox-bench: the library against the C system-call floor (Sources/CMailboxBaseline) and, with
// --peers, what a user would pick instead (Python's dirq, mailbox.Maildir, persist-queue and a
// SQLite table). See docs/PERFORMANCE.md.
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

if let (first, second) = options.compare {
  do {
    exit(try Compare.run(first, second) ? 0 : 1)
  } catch {
    FileHandle.standardError.write(Data("mailbox-bench --compare: \(error)\n".utf8))
    exit(66)
  }
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
let context = BenchContext(options: options, workspace: workspace, report: report)

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

let loadAtStart = Machine.load()
if !options.json { print(Machine.describe(base: workspace.base) + "; load " + loadAtStart) }
group("throughput") { try ThroughputMeasures(context: context).run() }
var depth = DepthMeasures(context: context)
group("depth") { try depth.run() }
group("batch") { try BatchMeasure(context: context).run() }
group("concurrency") { try ConcurrencyMeasure(context: context).run() }
group("wake") { try WakeMeasure(context: context).run() }
group("memory") { try MemoryMeasure(context: context).run() }
group("drain") { try DrainMeasure(context: context).run() }
group("bridge") { try BridgeMeasure(context: context).run() }
group("peers") { try PeerMeasures(context: context).run() }
Targets.check(report.rows, options: options, json: options.json)
if !options.json {
  print(
    String(format: "elapsed %.1f s", Double(nowNanoseconds() - started) / 1e9)
      + "; load average at start \(loadAtStart), at end \(Machine.load())")
}
workspace.removeAll()
exit(failed ? 1 : 0)
