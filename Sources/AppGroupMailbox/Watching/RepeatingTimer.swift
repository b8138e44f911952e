import Dispatch
import Foundation

/// A repeating Dispatch timer, running from creation until ``cancel()`` (or its release): a
/// polling watcher's checks and the place checks of watchers and event sequences.
///
/// Thread safety: Dispatch sources are thread-safe but not marked `Sendable`; this wrapper is.
final class RepeatingTimer: @unchecked Sendable {
  private let source: any DispatchSourceTimer

  /// Starts calling `handler` on `queue` every `seconds` (at least 1 ms), first after one
  /// interval, each call up to `leeway` late.
  init(
    every seconds: TimeInterval, leeway: DispatchTimeInterval, on queue: DispatchQueue,
    _ handler: @escaping @Sendable () -> Void
  ) {
    let interval = max(seconds, 0.001)
    source = DispatchSource.makeTimerSource(queue: queue)
    source.schedule(deadline: .now() + interval, repeating: interval, leeway: leeway)
    source.setEventHandler(handler: handler)
    source.resume()
  }

  /// Stops the timer: no call starts after this returns. Idempotent.
  func cancel() { source.cancel() }

  deinit { source.cancel() }
}
