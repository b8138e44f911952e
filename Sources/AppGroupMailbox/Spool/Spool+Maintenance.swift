import Foundation
import Glibc
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
    if due { try recoverClaims(diagnostics: &diagnostics) }
  }

  /// Restores every claim whose lease ran out to `pending/` under its original name (so at its
  /// original position), or deletes it when the message also outlived its lifetime. Two
  /// processes sweeping at once race on the same rename: one wins, the other sees ENOENT.
  func recoverClaims(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let clock = now
    var recovered = 0
    var earliestLeft = Int64.max
    defer { nextLeaseDeadline.withLock { $0 = earliestLeft } }
    try mapIO("recover") {
      for entry in try Syscall.list(directories.claimed) {
        guard let claimed = ClaimedName(parsing: entry.name) else { continue }
        guard claimed.leaseUntilMicros < clock else {
          earliestLeft = min(earliestLeft, claimed.leaseUntilMicros)
          continue
        }
        do {
          if clock - claimed.message.key.micros >= limits.messageLifetime.microseconds {
            if try removeCounted({ try Syscall.unlink(directories.claimed, entry.name) }) {
              diagnostics.append(.expiredMessageRemoved)
            }
          } else {
            try Syscall.renameNoReplace(
              directories.claimed, entry.name, directories.pending, claimed.message.fileName)
            recovered += 1
            diagnostics.append(.abandonedClaimRecovered)
          }
        } catch let error as SystemCallError where error.isNotFound {
          continue
        } catch let error as SystemCallError where error.errno == EEXIST {
          // The same message is also pending: a second copy, never delivered twice over.
          try quarantine(
            from: directories.claimed, entry.name, id: claimed.message.id, reason: .unsafe,
            counted: true, diagnostics: &diagnostics)
        }
      }
      if recovered > 0 { try flushDirectory(directories.pending) }
    }
    if recovered > 0 { configuration.onPending?() }
  }

  /// Everything maintenance does: recovers abandoned claims, deletes expired pending messages
  /// and stale temporary files, trims quarantine and rebuilds the depth counter from the names.
  /// - Complexity: O(n log n) in the entries of the namespace.
  func maintain(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    lastSweep.withLock { $0 = now }
    try recoverClaims(diagnostics: &diagnostics)
    try mapIO("maintenance") {
      let clock = now
      for (name, _) in try pendingNames()
      where clock - name.key.micros >= limits.messageLifetime.microseconds {
        if try removeCounted({ try Syscall.unlink(directories.pending, name.fileName) }) {
          diagnostics.append(.expiredMessageRemoved)
        }
      }
      try sweepTemporaryFiles(diagnostics: &diagnostics)
      try trimQuarantine(diagnostics: &diagnostics)
      try withStateLock { counters in counters = try recount(stored: counters) }
    }
  }

  /// Deletes entries of `tmp/` whose modification time is older than the grace period (a
  /// crashed writer's leftovers); younger ones may belong to a live writer and stay.
  func sweepTemporaryFiles(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let cutoff = now - SpoolConfiguration.temporaryFileGrace.microseconds
    for entry in try Syscall.list(directories.tmp) {
      guard let info = try? Syscall.lstat(directories.tmp, entry.name) else { continue }
      let modified = Int64(info.st_mtim.tv_sec) * 1_000_000 + Int64(info.st_mtim.tv_nsec) / 1_000
      guard modified < cutoff else { continue }
      if (try? removeEntry(directories.tmp, entry.name)) != nil {
        diagnostics.append(.staleTemporaryFileRemoved)
      }
    }
  }
}
