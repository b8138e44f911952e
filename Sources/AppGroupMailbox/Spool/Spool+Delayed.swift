import Foundation
import Glibc
import MailboxLocks
import Synchronization

extension Spool {
  /// Moves every message of `delayed/` whose due time has come into `pending/` under its pending
  /// name (deleting instead those that outlived `messageLifetime`), so any operation of any
  /// process makes due messages claimable. Returns how many became pending.
  ///
  /// With `arrivals` (a claim: what ``SpoolArrivals`` saw arrive in `delayed/`), the listing is
  /// skipped when nothing in `delayed/` can be due since the last listing (see
  /// ``DelayedScan``): with no system call when nothing arrived, or at the cost of one fstat(2)
  /// when inotify cannot say. `generation` is the ``SpoolArrivals/delayedGeneration`` the
  /// claim's take returned (nil: read it here), recorded with the listing.
  /// - Complexity: O(n) in the delayed entries (one listing).
  @discardableResult
  func promoteDue(
    arrivals: SpoolArrivals.Change? = nil, generation: UInt64? = nil,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Int {
    let clock = now
    var promoted = 0
    var nextEvent = Int64.max
    let lifetime = limits.messageLifetime.microseconds
    // Read before the listing: every arrival a take reported up to it is in the directory.
    let generation = generation ?? self.arrivals.delayedGeneration
    try mapIO("promote") {
      // Without a trusted feed the directory's times say whether anything changed.
      let before =
        arrivals == SpoolArrivals.Change.none
        ? nil : DelayedScan.Stamp(try Syscall.fstat(directories.delayed))
      if let arrivals, arrivals != SpoolArrivals.Change.some,
        delayedScan.withLock({ scan in
          guard scan.allowsSkipping(now: clock, current: before, generation: generation) else {
            return false
          }
          // Unchanged times (read after `generation`) vouch for every arrival up to it.
          if before != nil { scan.generation = max(scan.generation, generation) }
          return true
        })
      {
        return
      }
      for entry in try Syscall.list(directories.delayed) {
        guard let name = DelayedName(parsing: entry.name) else { continue }
        // A message past its lifetime expires whether due or not (a retry delay longer than
        // the lifetime, clamped to the last representable instant, ends here).
        let expiry = name.message.key.micros.addingMicros(lifetime)
        let expired = clock >= expiry
        guard expired || name.dueMicros <= clock else {
          nextEvent = min(nextEvent, name.dueMicros, expiry)
          continue
        }
        if try restore(
          directories.delayed, entry.name, as: name.message, expired: expired,
          diagnostics: &diagnostics)
        {
          promoted += 1
        }
      }
      let settled = before.flatMap { $0.isSettled ? $0 : nil }
      delayedScan.withLock {
        $0 = DelayedScan(
          stamp: settled, nextEvent: nextEvent, listedAt: clock, generation: generation)
      }
      if promoted > 0 { try flushDirectory(directories.pending) }
    }
    if promoted > 0 { configuration.onPending?() }
    return promoted
  }

  /// The earliest due time in `delayed/` (microseconds), or nil when nothing waits. A message
  /// already due whose own inode flags (immutable, append-only) refuse its promotion is left
  /// out: promotion passes over it (``move(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)``),
  /// so a due time in the past would only wake the waiting code again at once, for ever.
  /// - Complexity: O(n) in the delayed entries, plus one statx(2) per entry already due.
  func nextDueMicros() throws -> Int64? {
    let clock = now
    return try mapIO("next due") {
      try Syscall.list(directories.delayed).compactMap { entry -> Int64? in
        guard let due = DelayedName(parsing: entry.name)?.dueMicros else { return nil }
        guard due <= clock else { return due }
        return Self.isFlagged(directories.delayed, entry.name) ? nil : due
      }.min()
    }
  }

  /// Puts a claimed message into `delayed/`, due `delay` seconds from now, keeping its original
  /// key (so when due it returns to its original place) and its delivery count, or, without
  /// `countingDelivery`, the count it had before the claim (see ``release(_:countingDelivery:)``).
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when the claim is gone.
  func release(_ claimed: ClaimedName, delay: TimeInterval, countingDelivery: Bool = true) throws {
    guard !delay.isNaN else {
      throw TimeValue.invalid("retryAfter", "a number of seconds, not NaN")
    }
    guard delay > 0 else { return try release(claimed, countingDelivery: countingDelivery) }
    var events: [AppGroupMailboxDiagnostic] = []
    defer { emit(events) }
    var message = claimed.message
    if !countingDelivery { message.attempts = max(0, message.attempts - 1) }
    let target = DelayedName(
      dueMicros: try TimeValue.due(after: delay, from: now, parameter: "retryAfter"),
      message: message)
    let outcome: MoveOutcome
    do {
      outcome = try lockedMove(
        directories.claimed, claimed.fileName, to: directories.delayed, target.fileName,
        id: claimed.message.id, diagnostics: &events)
    } catch let error as SystemCallError {
      throw error.mailboxError("release")
    }
    if outcome == .vanished { throw AppGroupMailboxError.claimNoLongerExists }
    if outcome == .moved { try mapIO("release") { try flushDirectory(directories.delayed) } }
  }
}
