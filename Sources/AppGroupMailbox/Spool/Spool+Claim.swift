import Foundation
import Glibc
import MailboxLocks
import Synchronization

/// A message this process holds: its current claimed name and what the file said.
struct RawClaim: Sendable {
  var name: ClaimedName
  var header: EnvelopeHeader
  var payload: Data
  /// The claimed file's inode: a renewal (a rename) keeps it, so a handle can tell its claim
  /// under a renewed name from another file (``Spool/claimedName(of:token:inode:)``).
  var inode: UInt64
}

extension Spool {
  /// How long (microseconds) a regular file in `pending/` may show more than one link before it
  /// counts as a persistent hard link and is quarantined: a mover that falls back to link then
  /// unlink shows two links for an instant. Measured from the entry's ctime, which link(2) and
  /// unlink(2) update and nobody can set, so every process agrees without keeping state.
  static let linkedEntryGrace: Int64 = 1_000_000

  /// Claims up to `limit` messages in claim order (``MessageKey``: the highest priority level
  /// first, oldest first within a level), each by one rename into `claimed/`.
  ///
  /// Entries are checked before anything is read: a name that is not a message name, or an entry
  /// that is not a regular file (symlink, FIFO, socket, device, directory), is moved to
  /// quarantine as it is, without following or opening it; a regular file with more than one link
  /// is skipped (and looked at again by a timer, see ``noteRecheck(at:)``) until its link is
  /// older than ``linkedEntryGrace``, then that name is quarantined as a copy
  /// (``quarantineLinked(from:_:id:diagnostics:)``), so a last remaining name is delivered once.
  /// Expired
  /// messages met on the way are deleted. A claimed file is then opened without following links or
  /// blocking, checked on the descriptor, read to at most the payload limit plus one byte, and
  /// handed to `accept`, which keeps it as the caller's value and returns true, or returns false
  /// when it does not decode (quarantined as malformed). Entries quarantined or deleted do not
  /// count toward `limit`, so a call returns up to `limit` valid claims whatever sits in front
  /// of them. Another consumer winning a rename is
  /// not an error. When anything left the mailbox this way, the depth counter is rebuilt from the
  /// listing once (planted files were never counted, so decrementing would drift). An error after
  /// some messages were claimed returns those instead of throwing (they are in `claimed/`: thrown
  /// away, they would wait out their lease with a delivery counted).
  ///
  /// Candidates come from the spool's ``PendingIndex`` (FIFO across processes; see there), which
  /// lists `pending/` only when it cannot trust its inotify watch; a foreign name it reports is
  /// quarantined before any message is claimed.
  ///
  /// Messages whose id is in `passingOver` are left where they are, unread and not counted as
  /// skipped (the caller's choice: `mailboxctl drain` passes over what its handler asked to
  /// retry until it has tried the rest).
  ///
  /// Not generic, so the loop runs specialized whatever the caller's message type (a generic
  /// loop called from the generic mailbox class looks up `Optional<T>` and `Array<T>` metadata
  /// at run time on every message: about 1,500 instructions a claim, docs/PERFORMANCE.md).
  ///
  /// A call that claims nothing checks that the namespace is still there when an area may have
  /// left it since the last look (``SpoolArrivals/removalSuspected(_:)``: the namespace
  /// directory's inotify feed; without it, an fstat(2) of each directory every time): the index
  /// of a mailbox that claimed before would otherwise find nothing in a deleted `pending/`
  /// without an error (its open descriptor keeps the directory's own watch from reporting the
  /// deletion).
  /// - Returns: how many messages `accept` kept.
  /// - Throws: ``AppGroupMailboxError/mailboxDirectoryRemoved`` when nothing was claimed and the
  ///   namespace directory or one of its areas was deleted.
  /// - Complexity: O(log n) per entry looked at and per name that entered `pending/` since the
  ///   last call, plus one fstatat(2) per entry looked at; O(n log n) when the index lists.
  func claim(
    limit: Int?, passingOver: Set<UUID> = [], diagnostics: inout [AppGroupMailboxDiagnostic],
    accept: (RawClaim) -> Bool
  ) throws -> Int {
    try sweepIfDue(diagnostics: &diagnostics)
    // One read of the process's inotify instance tells what arrived in delayed/, settings and
    // pending/ before this claim began (a recovery by the sweep included).
    let arrived = arrivals.take(delayed: directories.delayed, namespace: directories.namespace)
    let promoted = try promoteDue(
      arrivals: arrived.delayed, generation: arrived.delayedGeneration, diagnostics: &diagnostics)
    if arrived.settings != .none, refreshSettings() {
      arrivals.settingsRefreshed(through: arrived.settingsGeneration)
    }
    if settings.isHeld {  // pause(): recovery and promotion go on; resume's wake-up brings a claim
      nextRecheck.withLock { if $0 <= now { $0 = .max } }
      return try nothingClaimed()
    }
    var accepted = 0
    let wanted = limit ?? Int.max
    var removed = 0
    let foreign = try mapIO("claim") {
      // Read again only for what this claim promoted, or when nothing read yet.
      try pendingIndex.refresh(
        pending: directories.pending, reading: !arrived.didRead || promoted > 0
      ) {
        try PendingIndex.listing(directories.pending, $0)
      }
    }
    for entry in foreign {
      // Nothing may sit in pending/ that drain cannot empty (a systemd DirectoryNotEmpty= unit
      // would restart forever): entries under foreign names go to quarantine at once.
      if quarantine(
        from: directories.pending, entry.exactName, id: nil, reason: .foreign,
        diagnostics: &diagnostics)
      {
        removed += 1
      } else {
        pendingIndex.invalidate()  // still there: list (and try again) on the next call
      }
    }
    // Names popped but left in pending/ (young hard links, failed quarantines) go
    // back into the index after the loop, so the next call looks at them again.
    var kept: [PendingName] = []
    var passed: [PendingName] = []
    nextRecheck.withLock { if $0 <= now { $0 = .max } }  // this claim looks again
    defer {
      pendingIndex.push(kept + passed)
      noteSkipped(kept, complete: accepted < wanted)
    }
    do {
      try claimFromIndex(
        wanted: wanted, passingOver: passingOver, kept: &kept, passed: &passed,
        removed: &removed, accepted: &accepted, diagnostics: &diagnostics, accept: accept)
    } catch {
      // Names taken from the index may not have been handled: list before the next claim.
      pendingIndex.invalidate()
      // Messages already renamed into claimed/ are this caller's: handed out, not stranded
      // there until their lease runs out with a delivery counted (ENOSPC on the 8th of 40).
      // The error comes back with the next claim.
      guard accepted > 0 else { throw error }
      // Nor lost to a recount that fails the same way (it lists; the depth is an upper bound).
      if removed > 0 { try? withStateLock { $0 = try recount(stored: $0) } }
      return accepted
    }
    if removed > 0 {
      // What was claimed is the caller's, whatever the recount does (the depth is an upper
      // bound until the next recount); with nothing claimed, its failure is the answer.
      if accepted > 0 {
        try? withStateLock { $0 = try recount(stored: $0) }
      } else {
        try mapIO("claim") { try withStateLock { $0 = try recount(stored: $0) } }
      }
    }
    return accepted > 0 ? accepted : try nothingClaimed()
  }

  /// 0, for a claim call that found nothing, or ``AppGroupMailboxError/mailboxDirectoryRemoved``
  /// when the namespace was deleted (see ``claim(limit:passingOver:diagnostics:accept:)``).
  private func nothingClaimed() throws -> Int {
    if arrivals.removalSuspected({ directories.isRemoved }) {
      throw AppGroupMailboxError.mailboxDirectoryRemoved
    }
    return 0
  }

  /// The loop of ``claim(limit:passingOver:diagnostics:accept:)`` over the index's names.
  private func claimFromIndex(
    wanted: Int, passingOver: Set<UUID>, kept: inout [PendingName], passed: inout [PendingName],
    removed: inout Int,
    accepted: inout Int, diagnostics: inout [AppGroupMailboxDiagnostic],
    accept: (RawClaim) -> Bool
  ) throws {
    while accepted < wanted, let (name, mark) = pendingIndex.nextWithMark() {
      if !passingOver.isEmpty, passingOver.contains(name.id) {
        passed.append(name)
        continue
      }
      if let mark, passesOver(name, mark) {
        kept.append(name)
        continue
      }
      // The index's names are canonical: a parsed name formats back to the same bytes.
      let entryName = name.fileName
      switch try take(name, entryName, diagnostics: &diagnostics) {
      case .vanished:
        pendingIndex.note(stale: true)  // another consumer won
        continue
      case .skipped(let lookAgain):
        kept.append(name)
        noteRecheck(at: lookAgain)
        continue
      case .removed:
        pendingIndex.note(stale: false)
        removed += 1
      case .claimed(let claimed):
        pendingIndex.note(stale: false)
        let outcome: Result<RawClaim, ReadFailure>
        do {
          outcome = try read(claimed)
        } catch {
          // An I/O error (EMFILE, EIO...) says nothing about the file: put it back so it is not
          // stuck in claimed/ until its lease runs out, then report the error.
          _ = try? lockedMove(
            directories.claimed, claimed.fileName, to: directories.pending, entryName,
            id: name.id, diagnostics: &diagnostics)
          throw error
        }
        switch outcome {
        case .success(let raw):
          if now.microsSince(raw.header.enqueuedAt) >= limits.messageLifetime.microseconds {
            // Only a delayed enqueue's name carries a time later than its enqueuedAt.
            if (try? Syscall.unlink(directories.claimed, claimed.fileName)) != nil {
              removed += 1
              diagnostics.append(.expiredMessageRemoved)
            }
          } else if accept(raw) {
            accepted += 1
          } else if quarantine(
            from: directories.claimed, claimed.fileName, id: name.id, reason: .malformed,
            diagnostics: &diagnostics)
          {
            removed += 1
          }
        case .failure(.vanished):
          continue
        case .failure(.otherType(let file)):
          putBack(claimed, as: entryName, file: file, diagnostics: &diagnostics)
        case .failure(.linked):
          // Linked between the look and the rename: put it back and look again later.
          noteRecheck(at: now + Self.linkedEntryGrace)
          _ = try? lockedMove(
            directories.claimed, claimed.fileName, to: directories.pending, entryName,
            id: name.id, diagnostics: &diagnostics)
        case .failure(let reason):
          if quarantine(
            from: directories.claimed, claimed.fileName, id: name.id, reason: reason.quarantine,
            diagnostics: &diagnostics)
          {
            removed += 1
          }
        }
      }
    }
  }

  /// What ``take(_:_:diagnostics:)`` did with one pending entry.
  enum Taken {
    /// Gone already (another consumer or process took or removed it).
    case vanished
    /// Left where it is: a young hard link, or an entry a failed quarantine could not move, to
    /// look at again at this clock reading (microseconds; see ``noteRecheck(at:)``).
    case skipped(Int64)
    /// Deleted (expired) or quarantined.
    case removed
    /// Renamed into `claimed/` under this name.
    case claimed(ClaimedName)
  }

  /// Decides about one pending entry before reading it: deletes it when expired, quarantines it
  /// when it is a dead letter, not a regular file, or a persistent hard link, and otherwise claims
  /// it by renaming it into `claimed/`.
  private func take(
    _ name: PendingName, _ entryName: String, diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Taken {
    let clock = now
    let retired = try mapIO("claim") {
      try retireUndeliverable(name, entryName, at: clock, diagnostics: &diagnostics)
    }
    switch retired {
    case .expired(left: false):
      let there = (try? Syscall.lstat(directories.pending, entryName)) != nil
      return there ? .skipped(clock + Self.recheckInterval) : .vanished
    case .deadLettered(left: false): return .skipped(clock + Self.recheckInterval)
    case .expired(left: true), .deadLettered(left: true): return .removed
    case nil: break
    }
    let info: stat
    do {
      info = try Syscall.lstat(directories.pending, entryName)
    } catch let error as SystemCallError where error.isNotFound {
      return .vanished
    } catch let error as SystemCallError {
      throw error.mailboxError("claim")
    }
    switch look(at: info, clock: clock) {
    case .regular:
      break
    case .notRegular:
      return quarantine(
        from: directories.pending, entryName, id: name.id, reason: .unsafe,
        diagnostics: &diagnostics) ? .removed : .skipped(clock + Self.recheckInterval)
    case .youngLink(let lookAgainAt):
      return .skipped(lookAgainAt)
    case .oldLink:
      return quarantineLinked(
        from: directories.pending, entryName, id: name.id, diagnostics: &diagnostics)
        ? .removed : .skipped(clock + Self.recheckInterval)
    }
    let claimed = ClaimedName(
      claiming: name, named: entryName, token: KernelRandom.next(),
      leaseUntilMicros: clock.addingMicros(limits.claimTimeout.microseconds))
    let outcome = try mapIO("claim") {
      try move(
        directories.pending, entryName, to: directories.claimed, claimed.fileName, id: name.id,
        freshTarget: true, passingOverFlagged: true, diagnostics: &diagnostics)
    }
    switch outcome {
    case .moved:
      nextLeaseDeadline.withLock { $0 = min($0, claimed.leaseUntilMicros) }
      return .claimed(claimed)
    case .vanished: return .vanished
    case .duplicate, .conflict: return .removed
    case .stuck: return .skipped(clock + Self.recheckInterval)
    }
  }

  /// The pending entries under message names, sorted in claim order, and the entries under any
  /// other name. - Complexity: O(n log n) in the pending entries.
  func pendingListing() throws -> (
    messages: [(PendingName, DirectoryEntry)], foreign: [DirectoryEntry]
  ) {
    var names: [(PendingName, DirectoryEntry)] = []
    var foreign: [DirectoryEntry] = []
    for entry in try Syscall.list(directories.pending) {
      if let name = PendingName(parsing: entry.name), case .text = entry.exactName {
        names.append((name, entry))
      } else {
        foreign.append(entry)
      }
    }
    names.sort { $0.0.key < $1.0.key }
    return (names, foreign)
  }
}
