import Dispatch
import Foundation
import Glibc
import MailboxLocks

/// How one wait ended.
enum WaitOutcome: Sendable, Equatable {
  case woke, timedOut, cancelled
  case finished(WakeUpStateMachine.Ending)
}

/// The I/O shell around a ``WakeUpStateMachine``: owns the inotify subscription (or the polling
/// timer), feeds events to the machine, performs its actions, and wakes waiters.
///
/// Machine steps and their I/O run under one lock, so a close never races a re-arm; waiters are
/// resumed, and the shared inotify instance released, only after the lock is dropped (the
/// instance's queue may be waiting for this lock).
final class WatcherCore: Sendable {
  private enum Waiter {
    case blocking(DispatchSemaphore)
    case async(CheckedContinuation<WaitOutcome, Never>)
  }

  private struct State {
    var machine = WakeUpStateMachine()
    var instance: InotifyInstance?
    var watches: [InotifyWatch] = []
    var timer: RepeatingTimer?
    /// The timer of the place checks (``placeCheckInterval``).
    var placeTimer: RepeatingTimer?
    var waiters: [Int: Waiter] = [:]
    var results: [Int: WaitOutcome] = [:]
    /// Async waiters whose id is drawn but who have not looked at the state yet, and those of
    /// them cancelled meanwhile (their task's cancellation handler ran first).
    var unregistered: Set<Int> = []
    var cancelledEarly: Set<Int> = []
    var nextWaiter = 1
  }

  /// Work to do after the lock is released.
  private struct Deferred {
    var wake: [(Waiter, WaitOutcome)] = []
    var release: InotifyInstance?
    var timer: RepeatingTimer?
    var placeTimer: RepeatingTimer?
    var diagnostics: [AppGroupMailboxDiagnostic] = []
  }

  /// How often the watcher asks its target whether the watched directories are still the ones
  /// their paths name (``WakeUpTarget/placeCheck()``), in seconds: an ancestor's rename sends
  /// no inotify event, so a mailbox whose container was renamed is reported gone within this
  /// time (a polling watcher's scans check it too).
  static let placeCheckInterval: TimeInterval = 10

  let target: any WakeUpTarget
  let pollingInterval: TimeInterval
  private let diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?
  private let state = Locked(State())

  /// Adds the watches (or falls back to polling), then scans once; checks the watched
  /// directories' place every `placeCheckInterval` seconds.
  init(
    target: any WakeUpTarget, pollingInterval: TimeInterval,
    diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?,
    placeCheckInterval: TimeInterval = WatcherCore.placeCheckInterval
  ) {
    self.target = target
    self.pollingInterval = pollingInterval
    self.diagnostic = diagnostic
    arm()
    startPlaceChecks(every: placeCheckInterval)
  }

  deinit {
    // A watcher dropped without close(): release what it holds.
    let leftovers = state.withLock { state in
      (state.instance, state.watches, state.timer)
    }
    if let instance = leftovers.0 {
      for watch in leftovers.1 { instance.remove(watch) }
      InotifyHub.release(instance)
    }
    leftovers.2?.cancel()
    state.withLock { $0.placeTimer }?.cancel()
    target.close()
  }

  /// Starts the timer that asks the target, outside the lock, whether its directories are in
  /// place and feeds the answer to the machine (which ignores it once finished).
  private func startPlaceChecks(every interval: TimeInterval) {
    let timer = RepeatingTimer(
      every: interval, leeway: .milliseconds(Int(interval * 100)), on: Self.pollQueue
    ) { [weak self] in
      guard let self, let input = self.target.placeCheck() else { return }
      self.process([input])
    }
    let kept = state.withLock { state -> Bool in
      guard !state.machine.isFinished else { return false }
      state.placeTimer = timer
      return true
    }
    if !kept { timer.cancel() }
  }

  // MARK: Inputs

  private func arm() {
    var input = WakeUpStateMachine.Input.armed
    var failure: SystemCallError?
    do {
      let instance = try InotifyHub.acquire()
      do {
        let watches = try target.addWatches(instance) { [weak self] events in
          self?.receive(events)
        }
        state.withLock { state in
          state.instance = instance
          state.watches = watches
        }
      } catch {
        InotifyHub.release(instance)
        throw error
      }
    } catch let error as SystemCallError {
      failure = error
      input = .armFailed
    } catch {
      failure = SystemCallError(call: "inotify_add_watch", errno: .invalidArgument)
      input = .armFailed
    }
    process([input], fallbackCause: failure)
  }

  private func receive(_ events: [InotifyEvent]) {
    let current = state.withLock { Set($0.watches.map(\.watch)) }
    var inputs: [WakeUpStateMachine.Input] = []
    var overflowed = false
    for event in events where event.watch == -1 || current.contains(event.watch) {
      guard let input = target.classify(event) else { continue }
      if input == .overflow { overflowed = true }
      inputs.append(input)
    }
    if overflowed { diagnostic?(.wakeUpQueueOverflowed) }
    process(inputs)
  }

  /// Closes the watcher: removes its watches, stops its timer, wakes every waiter. Idempotent.
  func close() {
    process([.close])
    target.close()
  }

  /// Runs inputs through the machine, performing each action under the lock.
  private func process(
    _ inputs: [WakeUpStateMachine.Input], fallbackCause: SystemCallError? = nil
  ) {
    guard !inputs.isEmpty else { return }
    var deferred = Deferred()
    state.withLock { state in
      var queue = inputs[...]
      while let input = queue.popFirst() {
        let action = state.machine.handle(input)
        if let next = perform(action, &state, &deferred, fallbackCause: fallbackCause) {
          queue.append(next)
        }
      }
    }
    for event in deferred.diagnostics { diagnostic?(event) }
    deferred.timer?.cancel()
    deferred.placeTimer?.cancel()
    if let instance = deferred.release { InotifyHub.release(instance) }
    for (waiter, outcome) in deferred.wake { resume(waiter, outcome) }
  }

  /// Performs one action; returns the input it produced, if any.
  private func perform(
    _ action: WakeUpStateMachine.Action, _ state: inout State, _ deferred: inout Deferred,
    fallbackCause: SystemCallError?
  ) -> WakeUpStateMachine.Input? {
    switch action {
    case .idle:
      return nil
    case .scan:
      return target.scan()
    case .rescan:
      guard !state.waiters.isEmpty, state.machine.take() else { return nil }
      for (id, waiter) in state.waiters {
        if case .blocking = waiter { state.results[id] = .woke }
        deferred.wake.append((waiter, .woke))
      }
      state.waiters.removeAll()
      return nil
    case .rearm:
      if let instance = state.instance {
        for watch in state.watches { instance.remove(watch) }
        state.watches = []
        guard target.reopen() else { return .gone }
        do {
          state.watches = try target.addWatches(instance) { [weak self] events in
            self?.receive(events)
          }
          return .rearmed
        } catch let error as SystemCallError {
          deferred.diagnostics.append(
            .wakeUpsPolling(systemCall: error.call, errno: error.errno.rawValue))
          deferred.release = instance
          state.instance = nil
          return .rearmHitLimit
        } catch {
          return .gone
        }
      }
      return .gone
    case .startPolling:
      if let cause = fallbackCause {
        deferred.diagnostics.append(
          .wakeUpsPolling(systemCall: cause.call, errno: cause.errno.rawValue))
      }
      state.timer = RepeatingTimer(
        every: pollingInterval, leeway: .milliseconds(1), on: Self.pollQueue
      ) { [weak self] in self?.process([.tick]) }
      return target.scan()
    case .finish(let ending):
      if let instance = state.instance {
        for watch in state.watches { instance.remove(watch) }
        deferred.release = instance
      }
      state.instance = nil
      state.watches = []
      deferred.timer = state.timer
      state.timer = nil
      deferred.placeTimer = state.placeTimer
      state.placeTimer = nil
      for (id, waiter) in state.waiters {
        if case .blocking = waiter { state.results[id] = .finished(ending) }
        deferred.wake.append((waiter, .finished(ending)))
      }
      state.waiters.removeAll()
      return nil
    }
  }

  private static let pollQueue = DispatchQueue(label: "AppGroupMailbox.poll")

  private func resume(_ waiter: Waiter, _ outcome: WaitOutcome) {
    switch waiter {
    case .blocking(let semaphore): semaphore.signal()
    case .async(let continuation): continuation.resume(returning: outcome)
    }
  }

  // MARK: Waiting

  /// The outcome available without waiting: a pending wake-up or the end.
  private func immediate(_ state: inout State) -> WaitOutcome? {
    if case .finished(let ending) = state.machine.mode { return .finished(ending) }
    return state.machine.take() ? .woke : nil
  }

  /// Blocks the calling thread until a wake-up, the end, or `timeout` seconds (nil: no limit).
  func wait(timeout: TimeInterval?) -> WaitOutcome {
    enum Registration {
      case done(WaitOutcome)
      case waiting(Int)
    }
    let semaphore = DispatchSemaphore(value: 0)
    let registration = state.withLock { state -> Registration in
      if let outcome = immediate(&state) { return .done(outcome) }
      if let timeout, !(timeout > 0) { return .done(.timedOut) }
      let id = state.nextWaiter
      state.nextWaiter += 1
      state.waiters[id] = .blocking(semaphore)
      return .waiting(id)
    }
    guard case .waiting(let id) = registration else {
      if case .done(let outcome) = registration { return outcome }
      return .timedOut
    }
    let deadline: DispatchTime =
      timeout.map { .now() + .nanoseconds(Int(min($0, 1e9) * 1e9)) } ?? .distantFuture
    if semaphore.wait(timeout: deadline) == .timedOut {
      let stillWaiting = state.withLock { $0.waiters.removeValue(forKey: id) != nil }
      if stillWaiting { return .timedOut }
      semaphore.wait()  // a waker removed us and is about to signal
    }
    return state.withLock { $0.results.removeValue(forKey: id) } ?? .timedOut
  }

  /// Suspends until a wake-up, the end, task cancellation, or `timeout` seconds.
  func wait(timeout: TimeInterval?) async -> WaitOutcome {
    let id = state.withLock { state -> Int in
      defer { state.nextWaiter += 1 }
      state.unregistered.insert(state.nextWaiter)
      return state.nextWaiter
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<WaitOutcome, Never>) in
        let now = state.withLock { state -> WaitOutcome? in
          state.unregistered.remove(id)
          // Cancelled before it looked: it takes no wake-up (that stays for the next waiter).
          if state.cancelledEarly.remove(id) != nil { return .cancelled }
          if let outcome = immediate(&state) { return outcome }
          if let timeout, !(timeout > 0) { return .timedOut }
          state.waiters[id] = .async(continuation)
          return nil
        }
        if let now {
          continuation.resume(returning: now)
          return
        }
        if let timeout {
          DispatchQueue.global().asyncAfter(deadline: .now() + min(timeout, 1e9)) {
            [weak self] in
            self?.end(id, .timedOut)
          }
        }
      }
    } onCancel: {
      end(id, .cancelled)
    }
  }

  /// Ends an async waiter early (timeout or cancellation), if it still waits.
  private func end(_ id: Int, _ outcome: WaitOutcome) {
    let waiter = state.withLock { state -> Waiter? in
      if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
      // Only a waiter still to look keeps the mark (one that has finished would keep it for
      // good).
      if outcome == .cancelled, state.unregistered.contains(id) { state.cancelledEarly.insert(id) }
      return nil
    }
    if let waiter { resume(waiter, outcome) }
  }

  /// Marks kept for async waiters that have not looked at the state yet (for tests: 0 once
  /// every wait has returned).
  var waiterMarks: Int { state.withLock { $0.unregistered.count + $0.cancelledEarly.count } }

  /// The machine's mode (for tests and ``AppGroupMailboxWatcher/isPolling``).
  var mode: WakeUpStateMachine.Mode { state.withLock { $0.machine.mode } }
}
