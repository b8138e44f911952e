import AppGroupMailbox
import Foundation

/// Peak resident memory of a process draining 20,000 messages of 64 KiB (the child's own
/// `VmHWM`, see ``Children/peakResidentBytes()``).
///
/// `mailboxctl drain` is being built in parallel (issue 6, branch `cli`); until it is merged this
/// measures ``DrainStandIn`` (the library's claim/acknowledge loop in a child process) and says
/// so in the note.
struct MemoryMeasure {
  let options: BenchOptions
  let workspace: Workspace
  let report: Report

  static let size = 65_536

  func run() throws {
    let count = options.quick ? 2_000 : 20_000
    let path = workspace.fresh("lib-drain")
    defer { workspace.remove(path) }
    let side = try LibrarySide(container: path, durability: .relaxed)
    _ = try side.timeEnqueue(count: count, size: Self.size)
    let out = path + "/drained"
    try Children.run(["_drain-lib", path, out])
    let words = try Children.result(out)
    let drained = Int(words.first ?? "") ?? -1
    let peak = Int(words.last ?? "") ?? -1
    guard drained == count else {
      throw BenchError.failed("drain stand-in got \(drained) of \(count)")
    }
    report.add(
      Measurement(
        group: "memory", name: "drain \(count) x 64 KiB, peak RSS", durability: "-",
        size: Self.size, unit: "MiB", library: Double(peak) / 1_048_576, baseline: nil,
        against: "-",
        note: "stand-in loop (mailboxctl drain pending, branch cli); target < 64 MiB"
          + (options.quick ? "; --quick uses 2,000" : ""),
        rounds: 1))
  }
}

/// Stand-in for `mailboxctl drain` until the CLI is merged: claims 16 at a time and
/// acknowledges each, until nothing is pending.
enum DrainStandIn {
  static let batch = 16

  /// Drains the bench mailbox in `container`; returns the number drained.
  static func drain(container: String) throws -> Int {
    let side = try LibrarySide(container: container, durability: .relaxed)
    var drained = 0
    while true {
      let claims = try side.mailbox.claimPending(limit: batch)
      if claims.isEmpty { return drained }
      for claim in claims { try claim.acknowledge() }
      drained += claims.count
    }
  }
}
