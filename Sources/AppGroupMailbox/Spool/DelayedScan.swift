import Foundation
import Glibc

/// What the last listing of `delayed/` found, so that a claim can skip the listing (seven system
/// calls) while nothing there can be due: inotify saying nothing arrived (``SpoolArrivals``), or
/// where it cannot say, one fstat(2) of the directory, replaces it.
///
/// A claim lists again when any of these holds:
/// - something arrived in the directory (inotify; also an arrival another claim took after the
///   last listing began, ``generation``), or, where inotify cannot say, the
///   directory's modification or change time (`st_mtim`, `st_ctim`) differs from what it was
///   before the last listing: every entry added, renamed in or out, or removed updates both
///   (inode(7), "Last modification timestamp");
/// - those times were too recent to trust when recorded: the kernel stamps them from a coarse
///   clock that can lag the time of day by a timer tick, and some filesystems keep whole seconds,
///   so a second change soon after the first may leave the same times. Times older than
///   ``trustMargin`` (``coarseTrustMargin`` when both have no nanoseconds) cannot be given again;
/// - the mailbox clock reached the earliest due time or expiry among the entries left;
/// - ``relistInterval`` passed since the last listing (bounds any miss, such as attributes an NFS
///   client cached; the mailbox's documented filesystems are local).
struct DelayedScan: Sendable {
  /// The times a listing may be skipped by: (mtime s, mtime ns, ctime s, ctime ns).
  struct Stamp: Equatable, Sendable {
    var mtime: timespec
    var ctime: timespec

    static func == (lhs: Stamp, rhs: Stamp) -> Bool {
      lhs.mtime.tv_sec == rhs.mtime.tv_sec && lhs.mtime.tv_nsec == rhs.mtime.tv_nsec
        && lhs.ctime.tv_sec == rhs.ctime.tv_sec && lhs.ctime.tv_nsec == rhs.ctime.tv_nsec
    }

    init(_ info: stat) {
      mtime = info.st_mtim
      ctime = info.st_ctim
    }

    /// Whether no later change can leave the same times: both are older than the margin, read
    /// against the time of day (the clock the kernel stamps with, not the mailbox clock).
    var isSettled: Bool {
      var wall = timespec()
      clock_gettime(CLOCK_REALTIME, &wall)
      let coarse = mtime.tv_nsec == 0 && ctime.tv_nsec == 0
      let margin = coarse ? DelayedScan.coarseTrustMargin : DelayedScan.trustMargin
      func micros(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) &* 1_000_000 &+ Int64(time.tv_nsec / 1_000)
      }
      return max(micros(mtime), micros(ctime)) < micros(wall) - margin
    }
  }

  /// Microseconds: a time this old was stamped at least a timer tick before now.
  static let trustMargin: Int64 = 100_000
  /// Microseconds: the margin on a filesystem that keeps whole seconds.
  static let coarseTrustMargin: Int64 = 2_000_000
  /// Microseconds of the mailbox clock after which a claim lists again regardless.
  static let relistInterval: Int64 = 1_000_000

  /// The directory's times before the last listing, when settled; nil lists on the next claim
  /// that has to compare times (also after a listing inotify vouched for, which read none).
  var stamp: Stamp?
  /// The earliest due time or expiry (mailbox clock, microseconds) among the entries the last
  /// listing left in `delayed/`; `Int64.max` when none.
  var nextEvent: Int64 = .max
  /// The mailbox clock reading of the last listing.
  var listedAt: Int64 = .min
  /// ``SpoolArrivals/delayedGeneration`` read before the last listing began: every arrival a
  /// take reported up to it was in the directory when the listing began.
  var generation: UInt64 = 0

  /// Whether a claim at clock reading `now` may skip the listing: `current` is the directory's
  /// times now, or nil when inotify said nothing arrived since the claim's previous take
  /// (``SpoolArrivals``), which stands in for the comparison of times when the last listing
  /// began after every arrival any take reported (`generation`, the current
  /// ``SpoolArrivals/delayedGeneration``, is the one it recorded).
  func allowsSkipping(now: Int64, current: Stamp?, generation: UInt64) -> Bool {
    if let current {
      guard let stamp, stamp == current else { return false }
    } else {
      guard listedAt != .min, self.generation == generation else { return false }
    }
    let since = now.microsSince(listedAt)
    return now < nextEvent && since >= 0 && since < Self.relistInterval
  }
}
