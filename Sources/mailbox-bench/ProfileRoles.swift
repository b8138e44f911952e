import AppGroupMailbox
import Foundation

/// Worker roles for profiling one side alone under strace or valgrind (see
/// docs/PERFORMANCE.md): `mailbox-bench _profile <lib|c|raw> <enqueue|consume|cycle> <dir>
/// <full|relaxed> <count> <size>`. Consume prefills `count` messages (relaxed) first; `raw`
/// consumes them with the untyped mailbox (``RawSide``), the path `mailboxctl` uses. With
/// `MAILBOX_BENCH_STOP=1` in the environment, consume stops itself (SIGSTOP) after the prefill,
/// so a profiler can attach to the measured phase alone (`perf record -p`, then SIGCONT).
enum ProfileRole {
  static func run(_ args: RoleArguments) throws {
    let usage =
      "usage: mailbox-bench _profile <lib|c|raw> <enqueue|consume|cycle> <dir> <full|relaxed>"
      + " <count> <size>"
    guard args.values.count == 6, ["lib", "c", "raw"].contains(args.values[0]),
      ["enqueue", "consume", "cycle"].contains(args.values[1]),
      ["full", "relaxed"].contains(args.values[3])
    else { throw BenchError.setup(usage) }
    let (side, measure, path, durable) = (
      try args[0], try args[1], try args[2], try args[3] == "full"
    )
    let (count, size) = (try args.int(4), try args.int(5))
    let nanoseconds: Int64
    if side == "c" {
      let spool = try BaselineSide(root: path, durable: durable)
      switch measure {
      case "enqueue": nanoseconds = try spool.timeEnqueue(count: count, size: size)
      case "consume":
        try spool.prefill(count: count, size: size, durable: durable)
        stopIfAsked()
        nanoseconds = try spool.timeConsume(count: count)
      default: nanoseconds = try spool.timeCycle(count: count, size: size)
      }
    } else {
      let spool = try LibrarySide(container: path, durability: durable ? .full : .relaxed)
      switch measure {
      case "enqueue": nanoseconds = try spool.timeEnqueue(count: count, size: size)
      case "consume":
        _ = try LibrarySide(container: path, durability: .relaxed).timeEnqueue(
          count: count, size: size)
        stopIfAsked()
        if side == "raw" {
          nanoseconds = try RawSide(container: path, durability: durable ? .full : .relaxed)
            .timeConsume(count: count)
        } else {
          nanoseconds = try spool.timeConsume(count: count)
        }
      default: nanoseconds = try spool.timeCycle(count: count, size: size)
      }
    }
    print("\(side) \(measure): \(Rounds.cost(count, nanoseconds)) us/op")
  }

  /// Stops this process (SIGSTOP) when `MAILBOX_BENCH_STOP` is `1`, until a SIGCONT.
  private static func stopIfAsked() {
    if ProcessInfo.processInfo.environment["MAILBOX_BENCH_STOP"] == "1" { raise(SIGSTOP) }
  }
}
