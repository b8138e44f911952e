import Foundation
import Glibc
import MailboxLocks
import Synchronization

extension Spool {
  /// How often (microseconds) claims and enqueues look for abandoned claims: at most every
  /// second, and at least twice per claim timeout.
  var sweepInterval: Int64 { min(1_000_000, limits.claimTimeout.microseconds / 2) }

  /// Runs ``recoverClaims(diagnostics:)`` when the last sweep of this instance is older than
  /// ``sweepInterval``, or when a lease this instance knows of has run out since.
  ///
  /// That is exact for every claim: one made by another process after the last sweep has a
  /// deadline at least a claim timeout (twice the interval) after that sweep.
  func sweepIfDue(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let clock = now
    let leaseRanOut = clock > nextLeaseDeadline.withLock { $0 }
    let due = lastSweep.withLock { last -> Bool in
      guard
        last == Int64.min || clock - last >= sweepInterval || clock < last || leaseRanOut
      else {
        return false
      }
      last = clock
      return true
    }
    // A deleted namespace fails its listings first: reported as a claim or enqueue reports it.
    if due {
      try removalReported {
        try recoverClaims(diagnostics: &diagnostics)
        try promoteDue(diagnostics: &diagnostics)
      }
    }
    let temporaryDue = lastTemporarySweep.withLock { last -> Bool in
      guard last == Int64.min || clock - last >= Self.temporarySweepInterval || clock < last
      else { return false }
      last = clock
      return true
    }
    if temporaryDue {
      try removalReported {
        try mapIO("sweep") { try sweepTemporaryFiles(diagnostics: &diagnostics) }
      }
    }
  }

  /// How often (microseconds) claims and enqueues sweep `tmp/` for a crashed writer's leftovers.
  static let temporarySweepInterval: Int64 = 60_000_000

  /// Restores every claim whose lease ran out to `pending/` under its original name (so at its
  /// original position), or deletes it when the message also outlived its lifetime. A lease
  /// ending more than ``AppGroupMailboxLimits/claimTimeoutCeiling`` plus a day ahead was never
  /// given by a process (a planted or corrupted name) and counts as run out, so it cannot hold a place in
  /// the depth bound for centuries. Two processes sweeping at once race on the same rename: one
  /// wins, the other sees ENOENT.
  func recoverClaims(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let clock = now
    let latestLease = clock.addingMicros(AppGroupMailboxLimits.forgedLeaseHorizonMicros)
    var recovered = 0
    var earliestLeft = Int64.max
    defer { nextLeaseDeadline.withLock { $0 = earliestLeft } }
    try mapIO("recover") {
      for entry in try Syscall.list(directories.claimed) {
        guard let claimed = ClaimedName(parsing: entry.name) else { continue }
        guard claimed.leaseUntilMicros < clock || claimed.leaseUntilMicros > latestLease else {
          earliestLeft = min(earliestLeft, claimed.leaseUntilMicros)
          continue
        }
        // A copy already pending under its name is the move policy's case: the claim is
        // dropped or quarantined and the depth rebuilt; the message stays once.
        if try restore(
          directories.claimed, entry.name, as: claimed.message,
          expired: isExpired(claimed.message, at: clock),
          diagnostics: &diagnostics)
        {
          recovered += 1
          diagnostics.append(.abandonedClaimRecovered)
        }
      }
      if recovered > 0 { try flushDirectory(directories.pending) }
    }
    if recovered > 0 { configuration.onPending?() }
  }

  /// Everything maintenance does: recovers abandoned claims, makes due delayed messages pending,
  /// deletes expired pending messages and stale temporary files, trims quarantine and rebuilds
  /// the depth counter from the names. Returns how many delayed messages became pending.
  /// - Complexity: O(n log n) in the entries of the namespace.
  @discardableResult
  func maintain(diagnostics: inout [AppGroupMailboxDiagnostic]) throws -> Int {
    lastSweep.withLock { $0 = now }
    try recoverClaims(diagnostics: &diagnostics)
    let promoted = try promoteDue(diagnostics: &diagnostics)
    try mapIO("maintenance") {
      let clock = now
      let (names, foreign) = try pendingListing()
      for entry in foreign {
        quarantine(
          from: directories.pending, entry.exactName, id: nil, reason: .foreign,
          diagnostics: &diagnostics)
      }
      for (name, entry) in names
      where isExpired(name, at: clock) {
        // An area that refuses the deletion is the claims' and enqueues' error to report.
        _ = try? expire(directories.pending, entry.name, id: name.id, diagnostics: &diagnostics)
      }
      try sweepTemporaryFiles(diagnostics: &diagnostics)
      try trimQuarantine(diagnostics: &diagnostics)
      try withStateLock { counters in counters = try recount(stored: counters) }
    }
    return promoted
  }

  /// Deletes entries of `tmp/` whose modification time is older than the grace period (a
  /// crashed writer's leftovers); younger ones may belong to a live writer and stay.
  func sweepTemporaryFiles(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let cutoff = now - SpoolConfiguration.temporaryFileGrace.microseconds
    for entry in try Syscall.list(directories.tmp) {
      guard let info = try? Syscall.lstat(directories.tmp, entry.exactName) else { continue }
      let modified = Int64(info.st_mtim.tv_sec) * 1_000_000 + Int64(info.st_mtim.tv_nsec) / 1_000
      guard modified < cutoff else { continue }
      if (try? removeEntry(directories.tmp, entry.exactName)) != nil {
        diagnostics.append(.staleTemporaryFileRemoved)
      }
    }
  }
}
