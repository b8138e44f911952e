import AppGroupMailbox

/// Batch enqueue (``AppGroupMailbox/enqueue(contentsOf:priority:)``): many messages, one lock and one
/// directory flush per batch, against the C baseline doing the same (a flush per file, one per
/// batch for the directory).
struct BatchMeasure: MeasureGroup {
  let context: BenchContext

  static let batch = 64
  static let size = 256

  func run() throws {
    for durable in [true, false] {
      let count = durable ? (options.quick ? 128 : 512) : (options.quick ? 512 : 4_096)
      let body = LibrarySide.body(size: Self.size)
      let messages = [String](repeating: body, count: Self.batch)
      let result = try Rounds.alternate(options.roundCount) {
        let path = workspace.fresh("c-batch")
        defer { workspace.remove(path) }
        return Double(
          try BaselineSide(root: path, durable: durable).timeEnqueueBatch(
            count: count, size: Self.size, batch: Self.batch))
      } library: {
        let path = workspace.fresh("lib-batch")
        defer { workspace.remove(path) }
        let side = try LibrarySide(container: path, durability: durable ? .full : .relaxed)
        let start = nowNanoseconds()
        for _ in 0..<(count / Self.batch) { _ = try side.mailbox.enqueue(contentsOf: messages) }
        return Double(nowNanoseconds() - start)
      }
      let rates = result.map { Rounds.rate(count, Int64($0)) }
      report.add(
        .rates(
          rates, group: "batch", name: "enqueue, batches of \(Self.batch)", durable: durable,
          size: Self.size, note: "\(count) msgs/run; C flushes the directory once per batch too"))
    }
  }
}
