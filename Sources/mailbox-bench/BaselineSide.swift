import CMailboxBaseline

/// The C baseline (Sources/CMailboxBaseline), one spool directory.
final class BaselineSide {
  let spool: OpaquePointer

  /// Opens (creating) the baseline spool at `root`.
  init(root: String, durable: Bool, maxMessage: Int = 1 << 20) throws {
    guard let spool = cbaseline_open(root, durable ? 1 : 0, maxMessage) else {
      throw BenchError.setup("cannot open the C baseline at \(root)")
    }
    self.spool = spool
  }

  deinit { cbaseline_close(spool) }

  private func check(_ nanoseconds: Int64, _ what: String) throws -> Int64 {
    guard nanoseconds >= 0 else { throw BenchError.failed("C baseline \(what)") }
    return nanoseconds
  }

  func timeEnqueue(count: Int, size: Int) throws -> Int64 {
    try check(cbaseline_time_enqueue(spool, count, size), "enqueue")
  }

  func timeConsume(count: Int) throws -> Int64 {
    try check(cbaseline_time_consume(spool, count), "consume")
  }

  func timeCycle(count: Int, size: Int) throws -> Int64 {
    try check(cbaseline_time_cycle(spool, count, size), "cycle")
  }

  func timeEnqueueBatch(count: Int, size: Int, batch: Int) throws -> Int64 {
    try check(cbaseline_time_enqueue_batch(spool, count, size, batch), "batch enqueue")
  }

  /// Prefills without flushes, then restores the durability.
  func prefill(count: Int, size: Int, durable: Bool) throws {
    cbaseline_set_durable(spool, 0)
    _ = try check(cbaseline_time_enqueue(spool, count, size), "prefill")
    cbaseline_set_durable(spool, durable ? 1 : 0)
  }

  /// Lists pending now (the one listing a long-lived consumer makes).
  func refresh() throws {
    guard cbaseline_refresh(spool) >= 0 else { throw BenchError.failed("C baseline listing") }
  }
}
