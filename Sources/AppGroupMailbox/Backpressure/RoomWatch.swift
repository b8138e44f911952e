import Dispatch
import Foundation
import Glibc
import MailboxLocks

/// Wakes a producer waiting for room in a full mailbox: an inotify subscription (on the
/// process's shared instance, ``InotifyHub``) to the events by which a message leaves the
/// depth: an unlink in `claimed/` (acknowledge, expiry), `pending/` (expiry, discard, cancel)
/// or `delayed/` (expiry, cancel), a rename out of `claimed/` (a claim quarantined; a release
/// or recovery also wakes it, harmlessly), an arrival in `quarantine/`, and a new `settings`
/// file (a raised bound). Events are hints: after one, the producer simply tries again.
///
/// Without inotify (the instance limit, another NFS client) it wakes nobody and the caller's
/// bounded re-check (``fallbackInterval``) alone finds the room.
final class RoomWatch: Sendable {
  /// The longest a waiting producer sleeps between two attempts when no event arrives.
  static let fallbackInterval: TimeInterval = 1

  private let instance: InotifyInstance?
  private let subscriptions: Locked<[InotifyWatch]>
  private let signal = DispatchSemaphore(value: 0)

  /// Subscribes to the areas of `directories`; armed when this returns.
  init(_ directories: SpoolDirectories) {
    let instance = try? InotifyHub.acquire()
    self.instance = instance
    var watches: [InotifyWatch] = []
    if let instance {
      let removals = InotifyMask.bits(IN_DELETE, IN_MOVED_FROM)
      let targets: [(Int32, UInt32)] = [
        (directories.claimed, removals), (directories.pending, InotifyMask.bits(IN_DELETE)),
        (directories.delayed, InotifyMask.bits(IN_DELETE)),
        (directories.quarantine, InotifyMask.arrivals),
        (directories.namespace, InotifyMask.bits(IN_MOVED_TO)),
      ]
      for (fd, mask) in targets {
        let added = try? instance.add(
          path: Syscall.procPath(fd), mask: mask | InotifyMask.options
        ) { [signal] _ in signal.signal() }
        if let added { watches.append(added) }
      }
    }
    subscriptions = Locked(watches)
  }

  /// Sleeps until an event or `seconds` pass (at most ``fallbackInterval``); events that
  /// arrived meanwhile are taken together.
  func wait(seconds: TimeInterval) {
    let slice = max(0, min(seconds, Self.fallbackInterval))
    if signal.wait(timeout: .now() + slice) == .success {
      while signal.wait(timeout: .now()) == .success {}
    }
  }

  /// Unsubscribes and leaves the shared instance. Call once.
  func close() {
    guard let instance else { return }
    for watch in subscriptions.withLock({ $0 }) { instance.remove(watch) }
    InotifyHub.release(instance)
  }
}

extension Spool {
  /// Runs `attempt`; while it throws ``AppGroupMailboxError/mailboxFull``, waits for room
  /// (``RoomWatch``) and runs it again, until `timeout` seconds have passed; then rethrows
  /// `mailboxFull`.
  /// `timeout` as every public timeout (``TimeValue/timeout(_:parameter:)``): 0 or less tries
  /// once, +infinity waits without limit.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"timeout"` and the accepted values)
  ///   when `timeout` is NaN; whatever `attempt` throws.
  func waitingForRoom<T>(_ timeout: TimeInterval, _ attempt: () throws -> T) throws -> T {
    // nil: no limit (about 31 years, which no wait reaches).
    let timeout = try TimeValue.timeout(timeout, optional: false) ?? 1e9
    do {
      return try attempt()
    } catch AppGroupMailboxError.mailboxFull {
      guard timeout > 0 else { throw AppGroupMailboxError.mailboxFull }
    }
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(min(timeout, 1e9) * 1e9)
    let watch = RoomWatch(directories)
    defer { watch.close() }
    while true {
      do {
        return try attempt()
      } catch AppGroupMailboxError.mailboxFull {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now < deadline else { throw AppGroupMailboxError.mailboxFull }
        watch.wait(seconds: Double(deadline - now) / 1e9)
      }
    }
  }
}
