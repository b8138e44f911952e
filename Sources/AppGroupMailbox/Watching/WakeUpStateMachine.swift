/// The decisions of a watcher, apart from its I/O: what to do after each thing that happens to
/// it. The shell (``WatcherCore``) performs the returned ``Action`` and reports results back as
/// further inputs. Pure and synchronous, so it is tested alone.
///
/// A wake-up is one flag (``isSignalled``): any number of signals before a consumer takes it
/// coalesce into one.
struct WakeUpStateMachine: Sendable, Equatable {
  /// How the watcher currently learns about changes.
  enum Mode: Sendable, Equatable {
    /// Not armed yet: the watch is being added.
    case starting
    /// inotify watches are in place.
    case watching
    /// A watch was lost; the shell is re-opening the directory and re-adding it.
    case rearming
    /// inotify is unavailable or at a limit: the directory is checked on a timer.
    case polling
    /// Closed, or the watched directory is gone for good.
    case finished(Ending)
  }

  /// Why a watcher finished.
  enum Ending: Sendable, Equatable {
    /// ``WatcherCore/close()`` was called.
    case closed
    /// The watched directory was deleted, moved or replaced and cannot be followed (a mailbox's
    /// open descriptors still name the old one).
    case directoryRemoved
  }

  /// What happened.
  enum Input: Sendable, Equatable {
    /// The watches were added (inotify mode).
    case armed
    /// inotify could not be used (`EMFILE` from inotify_init1, `ENOSPC` from
    /// inotify_add_watch, or inotify missing).
    case armFailed
    /// A check of the watched directory finished: `found` means something may be pending.
    case scanned(found: Bool)
    /// An event that can mean a new pending message (`IN_MOVED_TO`, `IN_CREATE`, a post).
    case changed
    /// `IN_Q_OVERFLOW`: events were dropped.
    case overflow
    /// `IN_DELETE_SELF`, `IN_MOVE_SELF`, `IN_UNMOUNT` or `IN_IGNORED` on a current watch.
    case watchLost
    /// Re-opening and re-watching succeeded.
    case rearmed
    /// Re-watching hit an inotify limit: go on by polling.
    case rearmHitLimit
    /// The directory cannot be followed (deleted, moved or replaced).
    case gone
    /// The polling timer fired.
    case tick
    /// The owner closed the watcher.
    case close
  }

  /// What the shell must do now.
  enum Action: Sendable, Equatable {
    /// Nothing.
    case idle
    /// Wake the consumer: it should rescan (claim until empty).
    case rescan
    /// Check the directory and report ``Input/scanned(found:)``.
    case scan
    /// Re-open the directory, re-add the watch, report ``Input/rearmed``,
    /// ``Input/rearmHitLimit`` or ``Input/gone``.
    case rearm
    /// Start the polling timer, report the fallback, then check the directory (as ``scan``).
    case startPolling
    /// Stop: remove watches, stop timers, wake every waiter with the ending.
    case finish(Ending)
  }

  private(set) var mode: Mode = .starting
  /// A wake-up waits to be taken.
  private(set) var isSignalled = false
  /// How many times a wake-up was signalled (coalesced signals count once).
  private(set) var signalCount = 0

  var isFinished: Bool {
    if case .finished = mode { return true }
    return false
  }

  /// The decision for `input`; updates the mode and the wake-up flag.
  mutating func handle(_ input: Input) -> Action {
    if isFinished { return .idle }
    switch input {
    case .close: return finish(.closed)
    case .gone: return finish(.directoryRemoved)
    case .armed: return enter(.watching, from: .starting) ? .scan : .idle
    case .armFailed: return enter(.polling, from: .starting) ? .startPolling : .idle
    case .scanned(let found): return found ? signal() : .idle
    case .changed, .overflow: return mode == .starting ? .idle : signal()
    case .watchLost: return enter(.rearming, from: .watching) ? .rearm : .idle
    case .rearmed: return enter(.watching, from: .rearming) ? signal() : .idle
    case .rearmHitLimit: return enter(.polling, from: .rearming) ? .startPolling : .idle
    case .tick: return mode == .polling ? .scan : .idle
    }
  }

  /// Enters mode `next` when the machine is in mode `from` and returns true; in any other mode
  /// the input is stale: nothing changes and the caller answers ``Action/idle``.
  private mutating func enter(_ next: Mode, from: Mode) -> Bool {
    guard mode == from else { return false }
    mode = next
    return true
  }

  private mutating func finish(_ ending: Ending) -> Action {
    mode = .finished(ending)
    return .finish(ending)
  }

  /// Takes the pending wake-up, if any (the consumer is about to rescan).
  mutating func take() -> Bool {
    defer { isSignalled = false }
    return isSignalled
  }

  private mutating func signal() -> Action {
    if !isSignalled { signalCount += 1 }
    isSignalled = true
    return .rescan
  }
}
