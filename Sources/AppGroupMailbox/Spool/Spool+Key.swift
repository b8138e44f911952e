import Foundation
import Glibc

/// A keyed enqueue's key and what to do when a pending message already has it.
struct KeyRequest: Sendable, Equatable {
  var key: String
  var replace: Bool

  /// The error for a key ``isValid(_:)`` refuses.
  static let invalid = AppGroupMailboxError.invalidLimit(
    "key (1 to 128 bytes of A-Z a-z 0-9 . _ - :, not starting with .)")

  /// Whether `key` may be used: 1 to 128 bytes of `A-Z a-z 0-9 . _ - :`, not starting with `.`
  /// (it is a file name in `keys/`).
  static func isValid(_ key: String) -> Bool {
    let bytes = Array(key.utf8)
    guard (1...128).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
    return bytes.allSatisfy { byte in
      (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        || byte == UInt8(ascii: ":")
    }
  }
}

extension Spool {
  /// The name of the key index directory inside the namespace (docs/FORMAT.md, "Keys").
  static let keysArea = "keys"

  /// Decides a keyed enqueue under the lock, before the depth bound is applied
  /// (docs/FORMAT.md, "Keys"): finds the pending message the key's index entry names, from the
  /// names in `pending/` alone. One that will never be delivered (expired, or a dead letter by
  /// its delivery count) is expired or quarantined here, as a claim would, and counts as none.
  /// Without one, records `id` as the key's message and returns nil:
  /// the enqueue goes on as any other. With one, `keep` returns ``EnqueueOutcome/kept(_:)``
  /// (nothing is written) and `replace` swaps the new file into the pending message's name
  /// (``replacePending(_:with:diagnostics:)``). Where the filesystem cannot swap, the new
  /// message goes on under its own id and the old one's name is returned in `superseded`: the
  /// caller deletes it once the new one is published and flushed, so no failure or crash
  /// leaves the key without its message (a consumer that claims the old one first gets both).
  /// `rewrite` re-encodes the temporary file `temporary` for a given id.
  /// - Complexity: O(n) in the pending entries (one listing of names), plus the header of the
  ///   message the index names.
  func resolveKey(
    _ request: KeyRequest, id: UUID, temporary: String, counters: inout SpoolCounters,
    superseded: inout PendingName?, rewrite: (UUID) throws -> Void,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> EnqueueOutcome? {
    let keysFile = try keysDirectory()
    let keys = keysFile.rawValue
    var found = try indexedID(keys, request.key).flatMap { try pendingName(of: $0) }
    // The entry names an id, not a message: a message enqueued later with that id (an import
    // after the keyed one was acknowledged) or an entry planted by hand would otherwise be
    // replaced or kept in the key's stead. Only a message whose header carries the key holds it.
    if let candidate = found, try !holdsKey(candidate, request.key) { found = nil }
    // A holder no claim will deliver (past its lifetime, or claimed as often as the bound
    // allows) is no holder: kept, or replaced under its name (keeping its time and delivery
    // count), the new message would be deleted or dead-lettered unseen. It is expired or
    // dead-lettered here, as the next claim would (left pending, a later raise of the bound
    // would deliver it beside the new one), and the new message is enqueued as any other.
    if let doomed = found,
      try retireUndeliverable(doomed, doomed.fileName, at: now, diagnostics: &diagnostics) != nil
    {
      found = nil
    }
    if let pending = found {
      let holder = pending.id
      guard request.replace else { return .kept(holder) }
      try rewrite(holder)
      switch try replacePending(pending, with: temporary, diagnostics: &diagnostics) {
      case .replaced: return .replaced(pending)
      case .gone: break
      case .cannotExchange: superseded = pending
      }
      try rewrite(id)
    }
    try writeIndex(keys, request.key, id)
    return nil
  }

  /// What ``replacePending(_:with:diagnostics:)`` did.
  enum Replacement {
    /// The new file holds the pending message's name; the old one is under the temporary name.
    case replaced
    /// The pending message was claimed (or removed) first; nothing changed.
    case gone
    /// The filesystem cannot exchange two names (`EINVAL`, `ENOSYS`); nothing changed.
    case cannotExchange
  }

  /// Swaps the temporary file (already carrying the pending message's id) into the pending
  /// message's name in one renameat2(2) `RENAME_EXCHANGE`, so the key is never without a
  /// pending message nor with two; the old file, now under the temporary name, is deleted by
  /// the caller. Changes nothing when the pending message was claimed (or removed) first, or
  /// where the filesystem lacks the flag. When the flush of `pending/` fails, the files are
  /// swapped back before the error is thrown.
  func replacePending(
    _ pending: PendingName, with temporary: String,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws -> Replacement {
    do {
      try Syscall.renameExchange(
        directories.tmp, temporary, directories.pending, pending.fileName)
    } catch let error as SystemCallError where error.isNotFound {
      return .gone
    } catch let error as SystemCallError
      where error.errno == .invalidArgument || error.errno == .noFunction
    {
      return .cannotExchange
    }
    do {
      try flushDirectory(directories.pending)
    } catch {
      // Not durable: swap the old message back, so the error means "not replaced" (unless a
      // consumer claimed the new one first), and the caller deletes the new file.
      try? Syscall.renameExchange(
        directories.pending, pending.fileName, directories.tmp, temporary)
      throw error
    }
    return .replaced
  }

  /// Whether the pending message `name` carries `key` in its header (read as far as the header;
  /// a file gone, unsafe or unreadable holds no key: a claim quarantines what is wrong with it).
  private func holdsKey(_ name: PendingName, _ key: String) throws -> Bool {
    guard
      case .success(let checked) = try readMessage(
        directories.pending, name.fileName, id: name.id, extent: .header)
    else { return false }
    return checked.header.key == key
  }

  /// The pending name carrying `id` (any delivery count), or nil.
  /// - Complexity: O(n) in the pending entries.
  private func pendingName(of id: UUID) throws -> PendingName? {
    for entry in try Syscall.list(directories.pending) where !entry.isKnownNotRegular {
      if let name = PendingName(parsing: entry.name), name.id == id { return name }
    }
    return nil
  }

  /// Opens `keys/`, creating it (with the mailbox's directory mode) when missing.
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` when it is a symlink, not a
  ///   directory, or on another mount or device (its cause naming the keys area), as the areas at
  ///   open;
  ///   ``SystemCallError`` of any other failure.
  private func keysDirectory() throws -> FileDescriptor {
    let keys = try openKeysDirectory()
    // On another mount or device (a filesystem, a bind mount, a btrfs subvolume), every rename
    // into it would fail with EXDEV: refused as the other areas are at open.
    if !directories.namespacePlacement.holds(keys.rawValue) {
      throw AppGroupMailboxError.containerUnavailable(
        SystemCallError(call: "", errno: .improperLink, role: .keysArea).cause("enqueue"))
    }
    return keys
  }

  /// Opens `keys/`, creating it when missing; see ``keysDirectory()``.
  private func openKeysDirectory() throws -> FileDescriptor {
    let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
    do {
      return try FileDescriptor.open(directories.namespace, Self.keysArea, flags, role: .keysArea)
    } catch let error as SystemCallError
      where error.errno == .notDirectory || error.errno == .tooManySymbolicLinkLevels
    {
      throw AppGroupMailboxError.containerUnavailable(error.cause("enqueue"))
    } catch let error as SystemCallError where error.isNotFound {
      var created = true
      do {
        try Syscall.makeDirectory(
          directories.namespace, Self.keysArea, mode: permissions.directoryMode)
      } catch let error as SystemCallError where error.errno == .fileExists {
        created = false  // another producer was faster; its mode stays
      }
      let fd = try FileDescriptor.open(
        directories.namespace, Self.keysArea, flags, role: .keysArea)
      // Explicit mode whatever the umask, only on what this process made.
      if created {
        try? Syscall.chmod(fd.rawValue, permissions.directoryMode)
        directories.adoptOwner(fd.rawValue)
      }
      return fd
    }
  }

  /// The id `keys/<key>` holds (one lower-case UUID and a line feed), or nil when the entry is
  /// missing or does not read as one.
  private func indexedID(_ keys: Int32, _ key: String) throws -> UUID? {
    let file: FileDescriptor
    do {
      let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
      file = try FileDescriptor.open(keys, key, flags, role: .keyFile)
    } catch let error as SystemCallError
      where error.isNotFound
      || (Self.unsafeOpenRefusals.contains(error.errno) && error.errno != .permissionDenied)
    {
      // Gone, or no file (a symlink: ELOOP; a FIFO, a directory...): no entry; the index write
      // replaces it. A key file this user may not read is a real entry (another member's):
      // EACCES is thrown, not taken for none, which would enqueue a second message for the key.
      return nil
    }
    let fd = file.rawValue
    guard let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG else { return nil }
    let bytes = try Syscall.pread(fd, limit: 38)
    guard bytes.count == 37, bytes[36] == UInt8(ascii: "\n") else { return nil }
    return NameBytes.parseUUID(bytes[..<36])
  }

  /// Points `keys/<key>` at `id`: written to `tmp/`, flushed (with full durability) and renamed
  /// over the entry, then `keys/` flushed.
  private func writeIndex(_ keys: Int32, _ key: String, _ id: UUID) throws {
    var bytes: [UInt8] = []
    NameBytes.uuid(id, into: &bytes)
    bytes.append(UInt8(ascii: "\n"))
    let temporary = KernelRandom.temporaryName(".key.tmp")
    let file = try FileDescriptor.open(
      directories.tmp, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
      mode: permissions.fileMode, role: .keyFile)
    let fd = file.rawValue
    do {
      try Syscall.chmod(fd, permissions.fileMode)
      directories.adoptOwner(fd)
      try bytes.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
      if isDurable { try Syscall.fsync(fd) }
      do {
        try Syscall.rename(directories.tmp, temporary, keys, key)
      } catch let error as SystemCallError
        where error.errno == .isDirectory || error.errno == .directoryNotEmpty
      {
        // A directory under the key's name is no entry either: removed (never followed), then
        // replaced.
        try removeEntry(keys, key)
        try Syscall.rename(directories.tmp, temporary, keys, key)
      }
    } catch {
      try? Syscall.unlink(directories.tmp, temporary)
      throw error
    }
    try flushDirectory(keys)
  }
}
