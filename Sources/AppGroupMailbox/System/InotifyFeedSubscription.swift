import Glibc

/// One directory's feed on the process's shared inotify instance (``InotifyHub``): the names
/// that arrived in it (`IN_MOVED_TO`, `IN_CREATE`) since the last take, and those that left it
/// (`IN_DELETE`, `IN_MOVED_FROM`) when its mask asks for them (the namespace directory's, for
/// a deleted area: ``SpoolArrivals``). The one way a spool
/// learns what changed in `pending/` (``PendingIndex``), `delayed/` and the namespace directory
/// (its `settings`, see ``SpoolArrivals``) without a system call per claim beyond the shared
/// read.
///
/// Watch first, then look: the first ``take(_:mask:reading:into:)`` subscribes and reports
/// ``InotifyFeedStatus/untrusted``, so its caller lists or stats the directory after the watch
/// exists and misses nothing that arrives in between. It reports `untrusted` again whenever
/// events may have been lost (queue overflow, a feed past its limit, the directory moved or
/// unmounted) and, after subscribing again, when the watch was lost (`IN_IGNORED`). Where inotify
/// is unavailable (inotify_init1(2) `EMFILE`, inotify_add_watch(2) `ENOSPC`; ``FaultInjection``
/// rules in debug builds) every take reports `untrusted` and the caller falls back to looking.
///
/// Not thread-safe by itself: its owner keeps it under its own lock. It holds one watch and one
/// share of the instance after its first take, both released when it is destroyed (the watch
/// removed with inotify_rm_watch(2) when no other subscriber shares it).
struct InotifyFeedSubscription: ~Copyable {
  private(set) var instance: InotifyInstance?
  private(set) var watch: InotifyWatch?
  /// True once subscribing failed (or never watching): every take reports `untrusted`.
  private(set) var unavailable: Bool

  /// A subscription made at the first take; `watching` false never uses inotify.
  init(watching: Bool = true) {
    unavailable = !watching
  }

  deinit {
    guard let instance else { return }
    if let watch { instance.remove(watch) }
    InotifyHub.release(instance)
  }

  /// Moves the names that arrived in `directory` (a descriptor; watched through its
  /// `/proc/self/fd` name, so exactly the directory it holds) into `records` (a length byte,
  /// then the name, each) and says whether they are every arrival since the previous take.
  /// With `reading`, the shared descriptor is read first (one read(2) without blocking);
  /// without, only what an earlier read of this claim routed is taken.
  /// - Complexity: O(e) in the events read and the names taken.
  mutating func take(
    _ directory: Int32, mask: UInt32, reading: Bool, into records: inout [UInt8]
  ) -> InotifyFeedStatus {
    guard !unavailable else { return .untrusted }
    guard let instance, let watch else {
      subscribe(directory, mask: mask)
      return .untrusted
    }
    let status = instance.take(watch, reading: reading, into: &records)
    guard status == .lost else { return status }
    instance.remove(watch)
    self.watch = nil
    subscribe(directory, mask: mask)
    return .untrusted
  }

  /// Joins the shared instance (once) and watches `directory`; on failure leaves the instance
  /// and reports `untrusted` on every take from then on.
  private mutating func subscribe(_ directory: Int32, mask: UInt32) {
    do {
      let joined = try instance ?? InotifyHub.acquire()
      instance = joined
      watch = try joined.addFeed(path: Syscall.procPath(directory), mask: mask)
    } catch {
      if let instance { InotifyHub.release(instance) }
      instance = nil
      unavailable = true
    }
  }
}
