import Foundation
import Glibc
import Synchronization

extension Spool {
  /// How deep ``removeEntry(_:_:)`` descends with open descriptors before it moves a deeper
  /// directory up to be emptied in a later round (bounds the descriptors it holds at once).
  static let removalDepth = 16

  /// Moves the entry `name` of `directory` (the entry itself, never a link's target) into
  /// `quarantine/` under a fresh unique name that keeps `id`, `reason` and the time, or deletes it
  /// when ``AppGroupMailboxLimits/maxQuarantinedFiles`` is 0; reports `reason`'s diagnostic.
  ///
  /// Quarantine is trimmed to one below its bound first, so it never holds more than the bound.
  /// A full or failing quarantine never stops delivery: when the move fails for any reason but
  /// "gone" (the directory cannot grow: ENOSPC, EDQUOT; EIO; a directory the link fallback cannot
  /// move), the entry is deleted instead and ``AppGroupMailboxDiagnostic/quarantinedFileDiscarded``
  /// is reported as well. Never throws.
  /// - Returns: whether the entry left `directory` (false when it had already vanished, or could
  ///   be neither moved nor deleted: then ``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace``
  ///   is reported and the entry is met again later).
  @discardableResult
  func quarantine(
    from directory: Int32, _ name: some SystemName, id: UUID?, reason: QuarantineReason,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) -> Bool {
    guard
      case .left = quarantineEntry(
        from: directory, name, id: id, reason: reason, diagnostics: &diagnostics)
    else { return false }
    return true
  }

  /// What ``quarantineEntry(from:_:id:reason:diagnostics:)`` did with an entry.
  enum QuarantineOutcome {
    /// Moved into `quarantine/`, or deleted where it could not be moved.
    case left
    /// Gone before it could be moved or deleted (ENOENT).
    case gone
    /// Still there, neither moved nor deleted. The cause: the refused rename into
    /// `quarantine/` when one was tried (its errno is the entry's own, EPERM for chattr(1)
    /// `+i`), else the refused delete; nil when no system call said why.
    case stayed(SystemCallError?)
  }

  /// ``quarantine(from:_:id:reason:diagnostics:)``, saying why an entry stayed: for a caller
  /// that reports the failure (a dead letter) rather than meeting the entry again later.
  func quarantineEntry(
    from directory: Int32, _ name: some SystemName, id: UUID?, reason: QuarantineReason,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) -> QuarantineOutcome {
    var refusal: SystemCallError?
    if limits.maxQuarantinedFiles > 0 {
      try? trimQuarantine(keeping: limits.maxQuarantinedFiles - 1, diagnostics: &diagnostics)
      // Any failure but "gone" falls through to the delete below.
      do {
        if let moved = try renameIntoQuarantine(from: directory, name, id: id, reason: reason) {
          guard moved else { return .gone }
          diagnostics.append(reason.diagnostic)
          return .left
        }
      } catch {
        refusal = error as? SystemCallError
      }
    }
    do {
      try removeEntry(directory, name)
    } catch let error as SystemCallError where error.isNotFound {
      return .gone
    } catch {
      diagnostics.append(.unsafeEntryLeftInPlace)
      return .stayed(refusal ?? error as? SystemCallError)
    }
    diagnostics.append(reason.diagnostic)
    if limits.maxQuarantinedFiles > 0 { diagnostics.append(.quarantinedFileDiscarded) }
    return .left
  }

  /// Renames the entry `name` of `directory` into `quarantine/` under a fresh quarantine name
  /// that keeps `id`, `reason` and the time, drawing a new nonce while a name is taken (8 tries).
  /// No trim, no delete: the callers decide (``quarantine(from:_:id:reason:diagnostics:)``, and a
  /// migration, which never deletes an old file).
  /// - Returns: true when moved, false when the entry was gone (ENOENT); nil when all 8 names
  ///   were taken.
  /// - Throws: ``SystemCallError`` of any other failure of the rename.
  func renameIntoQuarantine(
    from directory: Int32, _ name: some SystemName, id: UUID?, reason: QuarantineReason
  ) throws -> Bool? {
    for _ in 0..<8 {
      let target = QuarantineName(
        micros: now, reason: reason, id: id, nonce: UInt32.random(in: .min ... .max))
      do {
        try Syscall.renameNoReplace(directory, name, directories.quarantine, target.fileName)
        return true
      } catch let error as SystemCallError where error.isNotFound {
        return false
      } catch let error as SystemCallError where error.errno == .fileExists {
        continue
      }
    }
    return nil
  }

  /// Deletes the oldest quarantined entries beyond `keeping` (default: the bound), in
  /// ``TrimKey`` order: entries under foreign names first, then quarantine names by quarantine
  /// time. An entry that cannot be deleted (another user's directory, an immutable file) is left
  /// in place, reported once per trim as ``AppGroupMailboxDiagnostic/unsafeEntryLeftInPlace``,
  /// and the next oldest is deleted in its stead, so quarantine keeps its bound as long as fewer
  /// entries than the bound cannot be deleted. An entry that vanished
  /// (another process trimmed it) counts as deleted.
  /// - Complexity: O(n log n) in the quarantined entries; O(n) when one entry is over the bound
  ///   and it can be deleted.
  func trimQuarantine(keeping: Int? = nil, diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let entries = try Syscall.list(directories.quarantine)
    let excess = entries.count - (keeping ?? limits.maxQuarantinedFiles)
    guard excess > 0 else { return }
    let keyed = entries.map { (Self.trimKey($0), $0) }
    let before = { (lhs: (TrimKey, DirectoryEntry), rhs: (TrimKey, DirectoryEntry)) in
      lhs.0 < rhs.0
    }
    var removed = 0
    var stuck = false
    /// Deletes `victims` in order until `excess` entries are gone.
    func remove(_ victims: some Sequence<(TrimKey, DirectoryEntry)>) {
      for (_, entry) in victims where removed < excess {
        do {
          try removeEntry(directories.quarantine, entry.exactName)
          diagnostics.append(.quarantinedFileDiscarded)
          removed += 1
        } catch let error as SystemCallError where error.isNotFound {
          removed += 1
        } catch {
          stuck = true
        }
      }
    }
    if excess == 1, let oldest = keyed.min(by: before) {
      remove([oldest])
      if removed == 0 { remove(keyed.sorted(by: before).dropFirst()) }
    } else {
      remove(keyed.sorted(by: before))
    }
    if stuck { diagnostics.append(.unsafeEntryLeftInPlace) }
  }

  /// Where an entry stands in the order trim deletes quarantined entries (oldest first): entries
  /// under foreign names first, then quarantine names, each by the bytes of the name (so
  /// quarantine names by their time; a name that is not UTF-8 by its bytes too), as
  /// interop/python orders them (`agm.names.trim_key`). Swift's `String` order would compare
  /// canonically equivalent names as equal and repaired bytes as U+FFFD, so the two would trim
  /// different entries of a quarantine holding such names.
  struct TrimKey: Comparable {
    /// Whether the name has the shape of a quarantine name (``looksQuarantined(_:)``).
    var quarantined: Bool
    /// The name's bytes.
    var bytes: [UInt8]

    static func < (lhs: TrimKey, rhs: TrimKey) -> Bool {
      lhs.quarantined == rhs.quarantined
        ? lhs.bytes.lexicographicallyPrecedes(rhs.bytes) : !lhs.quarantined
    }
  }

  /// The ``TrimKey`` of `entry`.
  static func trimKey(_ entry: DirectoryEntry) -> TrimKey {
    TrimKey(quarantined: looksQuarantined(entry.name), bytes: entry.exactName.bytes)
  }

  /// Whether `name` has the shape of a quarantine name, `<16 digits>-<letters>-<uuid or
  /// unknown>-<8 hex digits>.q` (letters and hex digits of either case, any reason, as
  /// interop/python's pattern): trim removes entries of any other name first, so both trim the
  /// same entries (docs/FORMAT.md, "Quarantine").
  static func looksQuarantined(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    guard bytes.count >= 16 + 1 + 1 + 1 + 7 + 1 + 8 + 2, name.hasSuffix(".q"),
      bytes[..<16].allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }), bytes[16] == UInt8(ascii: "-")
    else { return false }
    let body = bytes[17..<(bytes.count - 2)]  // <letters>-<uuid|unknown>-<nonce>
    guard let reasonEnd = body.firstIndex(of: UInt8(ascii: "-")), reasonEnd > body.startIndex,
      body[..<reasonEnd].allSatisfy({ ($0 | 0x20) &- UInt8(ascii: "a") < 26 })
    else { return false }
    let rest = body.endIndex - reasonEnd  // "-<unknown or uuid>-<nonce>"
    guard rest == 1 + 7 + 1 + 8 || rest == 1 + 36 + 1 + 8 else { return false }
    let id = body[(reasonEnd + 1)..<(body.endIndex - 9)]
    let nonce = body[(body.endIndex - 8)...]
    return body[body.endIndex - 9] == UInt8(ascii: "-")
      && NameBytes.parseHex(nonce.map(NameBytes.lowercased), width: 8) != nil
      && (NameBytes.parseUUID(id) != nil || id.map(NameBytes.lowercased) == Array("unknown".utf8))
  }

  /// Removes an entry of any type without following links. A directory is emptied through
  /// descriptors opened with `O_NOFOLLOW`, so nothing outside it is ever touched; subdirectories
  /// deeper than ``removalDepth`` are first renamed up into it and emptied in a later round, so a
  /// hostile tree of any depth is removed with a bounded number of open descriptors.
  /// - Throws: ``SystemCallError`` (ENOENT when the entry vanished; the unlink's own EPERM
  ///   for an entry that is not a directory, such as a file made immutable).
  /// - Complexity: O(entries × depth / ``removalDepth``).
  func removeEntry(_ directory: Int32, _ name: some SystemName) throws {
    let refusal: SystemCallError
    do {
      try Syscall.unlink(directory, name)
      return
    } catch let error as SystemCallError
      where error.errno == .isDirectory || error.errno == .notPermitted
    {
      refusal = error  // a directory (EPERM is unlink(2)'s answer for one too): emptied below
    }
    let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
    let topFile: FileDescriptor
    do {
      topFile = try FileDescriptor.open(directory, name, flags, role: .quarantinedDirectory)
    } catch let error as SystemCallError where error.errno == .notDirectory {
      throw refusal  // not a directory: the unlink's refusal is the cause
    }
    let top = topFile.rawValue
    var rounds = 0
    while true {
      let entries = try Syscall.list(top)
      if entries.isEmpty { break }
      rounds += 1
      // Every round removes at least one entry or hoists one level; a tree that keeps growing
      // under us (a live writer) is given up on rather than chased forever.
      guard rounds <= 1_000_000 else {
        throw SystemCallError(call: "unlinkat", errno: .directoryNotEmpty)
      }
      for entry in entries {
        try removeTree(top, entry.exactName, top: top, depth: 1)
      }
    }
    try Syscall.removeDirectory(directory, name)
  }

  /// Removes `name` in `parent`, a directory below `top`; see ``removeEntry(_:_:)``.
  private func removeTree(_ parent: Int32, _ name: EntryName, top: Int32, depth: Int) throws {
    do {
      try Syscall.unlink(parent, name)
      return
    } catch let error as SystemCallError
      where error.errno == .isDirectory || error.errno == .notPermitted
    {
      // A directory.
    } catch let error as SystemCallError where error.isNotFound {
      return
    }
    if depth >= Self.removalDepth {
      while true {
        let hoisted = "hoisted-" + String(KernelRandom.next(), radix: 16)
        do {
          try Syscall.renameNoReplace(parent, name, top, hoisted)
          return
        } catch let error as SystemCallError where error.errno == .fileExists {
          continue
        }
      }
    }
    let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
    let child = try FileDescriptor.open(parent, name, flags, role: .quarantinedDirectory)
    for entry in try Syscall.list(child.rawValue) {
      try removeTree(child.rawValue, entry.exactName, top: top, depth: depth + 1)
    }
    try Syscall.removeDirectory(parent, name)
  }
}
