/// The operations a measure times on either side, the C baseline and the library, so one loop
/// serves both. Each returns the elapsed nanoseconds for `count` operations.
protocol TimedSide {
  /// Enqueues `count` messages of `size` bytes.
  func timeEnqueue(count: Int, size: Int) throws -> Int64
  /// Claims, reads and acknowledges `count` messages one at a time.
  func timeConsume(count: Int) throws -> Int64
  /// Enqueues and then consumes a message, `count` times.
  func timeCycle(count: Int, size: Int) throws -> Int64
}

extension BaselineSide: TimedSide {}
extension LibrarySide: TimedSide {}
