import AppGroupMailbox
import Foundation
import MailboxLocks

/// The library's watcher on a mailbox's pending area (inotify, or its polling fallback),
/// forwarded to a ``Wakeup``, so the one coordinating thread of `drain --follow` and `watch`
/// waits for wake-ups, handler exits and stop signals with a single wait.
///
/// A dedicated thread blocks in ``AppGroupMailboxWatcher/wait(timeout:)`` (never a Swift
/// concurrency thread) and posts the `Wakeup` after each coalesced wake-up. The watch is armed
/// before `init` returns, so nothing made pending after that is missed. Wake-ups are hints:
/// after one, claim (or look) again.
final class MailboxWakeUps: Sendable {
  private struct State {
    var count = 0
    var failure: (any Error)?
  }

  /// What the forwarding thread and the caller share.
  private final class Shared: Sendable {
    let state = Locked(State())
  }

  private let watcher: AppGroupMailboxWatcher
  private let shared = Shared()

  /// Starts watching `mailbox` and forwarding wake-ups to `wakeup`.
  /// - Throws: ``CommandFailure`` when the watcher cannot be started.
  convenience init(_ mailbox: AppGroupRawMailbox, wakeup: Wakeup) throws(CommandFailure) {
    try self.init(wakeup: wakeup) { try mailbox.wakeUps() }
  }

  /// Starts watching with the watcher `start` returns (for example a read-only inspector's).
  init(wakeup: Wakeup, start: () throws -> AppGroupMailboxWatcher) throws(CommandFailure) {
    do {
      watcher = try start()
    } catch {
      throw CommandFailure(error, while: "watch")
    }
    do {
      try PosixThread.start(joinable: false, to: "wait for wake-ups") { [watcher, shared] in
        Self.forward(watcher, shared, to: wakeup)
      }
    } catch {
      watcher.close()
      throw error
    }
  }

  /// The waiting thread: counts each wake-up of `watcher` in `shared` and posts `wakeup`, until
  /// the watcher is closed or fails.
  private static func forward(
    _ watcher: AppGroupMailboxWatcher, _ shared: Shared, to wakeup: Wakeup
  ) {
    while true {
      do {
        // Nil timeout: false only once the watcher is closed.
        guard try watcher.wait(timeout: nil) else { return }
        shared.state.withLock { $0.count += 1 }
        wakeup.signal()
      } catch {
        shared.state.withLock { $0.failure = error }
        wakeup.signal()
        return
      }
    }
  }

  /// Whether the watcher fell back to polling.
  var isPolling: Bool { watcher.isPolling }

  /// The wake-ups since the previous call.
  /// - Throws: ``CommandFailure`` when watching ended with an error (the mailbox directory was
  ///   deleted, moved or replaced).
  func take() throws(CommandFailure) -> Int {
    let (count, failure) = shared.state.withLock { state in
      defer { state.count = 0 }
      return (state.count, state.failure)
    }
    if let failure { throw CommandFailure(failure, while: "") }
    return count
  }

  /// Stops watching; the forwarding thread ends. Idempotent.
  func close() { watcher.close() }
}
