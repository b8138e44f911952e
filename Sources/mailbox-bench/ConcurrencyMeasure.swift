import AppGroupMailbox
import Foundation

/// 4 producer and 4 consumer processes on one spool at once; messages per second from a common
/// start time to the last consumer's exit. Children of both sides are this executable, started
/// the same way and released at the same instant, so start-up cost is outside the timed span.
struct ConcurrencyMeasure: MeasureGroup {
  let context: BenchContext

  static let producers = 4
  static let consumers = 4
  static let size = 256

  func run() throws {
    for durable in [true, false] {
      let perProducer = durable ? (options.quick ? 20 : 150) : (options.quick ? 150 : 1_500)
      let result = try Rounds.alternate(options.roundCount) {
        try once(library: false, durable: durable, perProducer: perProducer)
      } library: {
        try once(library: true, durable: durable, perProducer: perProducer)
      }
      let total = perProducer * Self.producers
      let rates = result.map { Rounds.rate(total, Int64($0)) }
      report.add(
        .rates(
          rates, group: "concurrency", name: "4 producers + 4 consumers", durable: durable,
          size: Self.size, note: "\(total) msgs/run, 8 processes"))
    }
  }

  /// One run; returns nanoseconds from the common start to the last exit.
  private func once(library: Bool, durable: Bool, perProducer: Int) throws -> Double {
    let path = workspace.fresh(library ? "lib-mpmc" : "c-mpmc")
    defer { workspace.remove(path) }
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let spool = path + "/spool"
    let done = path + "/done"
    let mode = durable ? "full" : "relaxed"
    // Create the spool before the children race to.
    if library {
      _ = try LibrarySide(container: spool, durability: .relaxed)
    } else {
      _ = try BaselineSide(root: spool, durable: false)
    }
    let go = nowNanoseconds() + 400_000_000
    var producers: [(pid_t, String)] = []
    var consumers: [(pid_t, String)] = []
    for index in 0..<Self.consumers {
      let out = "\(path)/consumer-\(index)"
      let arguments =
        library
        ? ["_consume-lib", spool, mode, done, String(go), out]
        : ["_consume-c", spool, done, String(go), out]
      consumers.append((try Children.spawn(arguments), out))
    }
    for index in 0..<Self.producers {
      let out = "\(path)/producer-\(index)"
      let arguments = [
        library ? "_produce-lib" : "_produce-c", spool, mode, String(perProducer),
        String(Self.size), String(go), out,
      ]
      producers.append((try Children.spawn(arguments), out))
    }
    var late = false
    for (pid, out) in producers {
      guard try Children.wait(pid).status == 0 else { throw BenchError.failed("producer") }
      let words = try Children.result(out)
      guard words.count == 3 else { throw BenchError.failed("producer report") }
      late = late || words[2] == "late"
    }
    _ = FileManager.default.createFile(atPath: done, contents: nil)
    var end: Int64 = 0
    var consumed = 0
    for (pid, out) in consumers {
      guard try Children.wait(pid).status == 0 else { throw BenchError.failed("consumer") }
      let words = try Children.result(out)
      guard words.count == 3, let stopped = Int64(words[0]), let count = Int(words[1]) else {
        throw BenchError.failed("consumer report")
      }
      end = max(end, stopped)
      consumed += count
      late = late || words[2] == "late"
    }
    guard consumed == perProducer * Self.producers else {
      throw BenchError.failed(
        "\(library ? "library" : "C") consumers got \(consumed) of \(perProducer * 4)")
    }
    if late { FileHandle.standardError.write(Data("note: a child started late\n".utf8)) }
    return Double(end - go)
  }
}
