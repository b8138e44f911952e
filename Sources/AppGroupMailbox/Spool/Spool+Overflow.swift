import Foundation
import Glibc
import MailboxLocks

/// The depth bound at enqueue: making room under `maxMessages` with the overflow policy.
extension Spool {
  /// Ensures `room` free slots under the depth bound, with the lock held: recounts when the
  /// counter says they are not free (it may be high after a crash), then applies the overflow
  /// policy. Returns how many valid pending messages were discarded: the lowest level first,
  /// oldest first within a level, and never one above `level`, the incoming messages' level
  /// (evicting a more urgent message to admit a less urgent one would invert the priorities).
  /// `discardOldest` evicts nothing unless enough such messages exist to make all the room
  /// (else it throws ``AppGroupMailboxError/mailboxFull``, as ``rejectNewest`` would). With
  /// `mayDiscard` false (a migration, which must not delete what it imported) the bound is
  /// always `rejectNewest`'s.
  ///
  /// Before ``AppGroupMailboxOverflowPolicy/discardOldest`` evicts a valid message, every pending
  /// entry that is not one (expired or a dead letter by its name, not a regular file, a
  /// persistent hard link, too large, or a file whose envelope does not read) is taken out of
  /// line as a claim would (deleted or quarantined); if that made room, nothing is evicted.
  /// - Complexity: O(n) fstatat(2) calls in the depth when full, plus one open and a read of at
  ///   most 4 KiB per entry not checked before (``verifiedPending`` remembers the rest), and one
  ///   statx(2) per message chosen for eviction.
  func makeRoom(
    _ counters: inout SpoolCounters, room: Int = 1, level: Int, mayDiscard: Bool = true,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Int {
    guard counters.depth + room > limits.maxMessages else { return 0 }
    counters = try recount(stored: counters)
    guard counters.depth + room > limits.maxMessages else { return 0 }
    guard mayDiscard, overflowPolicy == .discardOldest else {
      throw AppGroupMailboxError.mailboxFull
    }
    let (names, foreign) = try pendingListing()
    for entry in foreign {
      quarantine(
        from: directories.pending, entry.exactName, id: nil, reason: .foreign,
        diagnostics: &diagnostics)
    }
    var valid: [(PendingName, DirectoryEntry)] = []
    var contained = 0
    var verified: [String: FileStamp] = [:]
    let known = verifiedPending.withLock { $0 }
    let clock = now
    for (name, entry) in names {
      // Expired or a dead letter by its name: out of the line as a claim would take it, not
      // left in place while a deliverable message is evicted.
      switch try retireUndeliverable(name, entry.name, at: clock, diagnostics: &diagnostics) {
      case .expired(let left), .deadLettered(let left):
        if left { contained += 1 }
        continue
      case nil:
        break
      }
      switch inspectPending(name, entry, known: known) {
      case .gone, .young:
        continue
      case .valid(let stamp):
        verified[entry.name] = stamp
        if name.key.level <= level { valid.append((name, entry)) }
      case .linked:
        // As a claim does: the name goes to quarantine as a copy (see quarantineLinked).
        if quarantineLinked(
          from: directories.pending, entry.name, id: name.id, diagnostics: &diagnostics)
        {
          contained += 1
        }
      case .invalid(let reason):
        if quarantine(
          from: directories.pending, entry.name, id: name.id, reason: reason,
          diagnostics: &diagnostics)
        {
          contained += 1
        }
      }
    }
    verifiedPending.withLock { $0 = verified }
    if contained > 0 {
      counters = try recount(stored: counters)
      guard counters.depth + room > limits.maxMessages else { return 0 }
    }
    guard valid.count >= counters.depth + room - limits.maxMessages else {
      throw AppGroupMailboxError.mailboxFull
    }
    // Evict from the lowest level up (the listing is in claim order: highest level first).
    valid.sort { lhs, rhs in
      let (left, right) = (lhs.0.key, rhs.0.key)
      return left.level != right.level ? left.level < right.level : left < right
    }
    // The candidates in eviction order, passing over files whose own inode flags refuse their
    // delete (chattr(1) +i, +a): one statx(2) per candidate taken.
    var order = valid.makeIterator()
    func nextCandidate() -> DirectoryEntry? {
      while let (_, entry) = order.next() {
        guard Self.isFlagged(directories.pending, entry.name) else { return entry }
        diagnostics.append(.unsafeEntryLeftInPlace)
      }
      return nil
    }
    // Enough are chosen before any is deleted: when flagged files leave too few, nothing is
    // evicted (deleting some and then refusing the message would lose them for nothing).
    var chosen: [DirectoryEntry] = []
    while chosen.count < counters.depth + room - limits.maxMessages, let entry = nextCandidate() {
      chosen.append(entry)
    }
    guard chosen.count >= counters.depth + room - limits.maxMessages else {
      throw AppGroupMailboxError.mailboxFull
    }
    var victims = chosen[...]
    var discarded = 0
    while counters.depth + room > limits.maxMessages,
      let entry = victims.popFirst() ?? nextCandidate()
    {
      do {
        try Syscall.unlink(directories.pending, entry.name)
      } catch let error as SystemCallError where error.isNotFound {
        continue  // claimed meanwhile (still counted in the depth): the next one goes instead
      }
      counters.depth -= 1
      discarded += 1
    }
    guard counters.depth + room <= limits.maxMessages else {
      throw AppGroupMailboxError.mailboxFull
    }
    return discarded
  }

  /// What ``inspectPending(_:_:known:)`` found.
  enum PendingInspection {
    case gone
    /// A hard link younger than ``Spool/linkedEntryGrace``: neither evicted nor quarantined.
    case young
    /// A hard link older than ``Spool/linkedEntryGrace``.
    case linked
    case valid(FileStamp)
    case invalid(QuarantineReason)
  }

  /// Checks a pending entry the way a claim would, without claiming it: the entry itself
  /// (``look(at:clock:)``), then the checked reader on its header
  /// (``readMessage(_:_:id:checkType:extent:unchanged:)``, types ignored: a message of another
  /// type is some consumer's, and eviction ignores types). An entry whose stamp is in `known`
  /// was checked before and is not read again.
  private func inspectPending(
    _ name: PendingName, _ entry: DirectoryEntry, known: [String: FileStamp]
  ) -> PendingInspection {
    guard let info = try? Syscall.lstat(directories.pending, entry.name) else { return .gone }
    switch look(at: info, clock: now) {
    case .regular: break
    case .notRegular: return .invalid(.unsafe)
    case .youngLink: return .young
    case .oldLink: return .linked
    }
    let stamp = FileStamp(info)
    if known[entry.name] == stamp { return .valid(stamp) }
    switch try? readMessage(
      directories.pending, entry.name, id: name.id, extent: .header, unchanged: stamp)
    {
    case .success: return .valid(stamp)
    case nil, .failure(.vanished), .failure(.linked): return .gone
    case .failure(let reason): return .invalid(reason.quarantine)
    }
  }
}
