import Foundation
import Glibc
import MailboxLocks

/// The settings a spool last read, and the identity of the file it read them from.
struct SettingsCache: Sendable {
  var settings: AppGroupMailboxSettings
  /// Inode, size and times of the file read (the stamp that identifies a pending file's
  /// content, reused); nil when there was none.
  var stamp: FileStamp?
  /// The file's members this build does not know, as their text
  /// (``SettingsText/Decoded/otherMembers``), which a change writes back.
  var otherMembers: [UInt8] = []
  /// Whether the settings came from the mailbox's file (false: the opener's, in memory).
  var stored: Bool { stamp != nil }
}

extension SpoolConfiguration {
  /// The settings a new mailbox opened with this configuration stores.
  var storedSettings: AppGroupMailboxSettings {
    AppGroupMailboxSettings(
      limits: limits, overflowPolicy: overflowPolicy, permissions: permissions)
  }
}

extension Spool {
  static let settingsName = "settings"

  /// The mailbox's stored settings as this spool knows them.
  var settings: AppGroupMailboxSettings { settingsCache.withLock { $0.settings } }
  /// The mailbox's stored settings, re-read first when the file changed (``refreshSettings()``),
  /// with the sharing mode the mailbox has (``permissions``: a group-shared namespace directory
  /// wins over a file that says private): what every public `settings` property returns.
  var freshSettings: AppGroupMailboxSettings {
    refreshSettings()
    return effective(settings)
  }

  /// `stored` with the mailbox's sharing mode, ``permissions``.
  func effective(_ stored: AppGroupMailboxSettings) -> AppGroupMailboxSettings {
    var settings = stored
    settings.permissions = sharedDirectory ? .groupShared : stored.permissions
    return settings
  }
  /// The overflow policy the mailbox stores.
  var overflowPolicy: AppGroupMailboxOverflowPolicy { settings.overflowPolicy }
  /// The sharing mode of the mailbox, the mode of every file and directory it creates:
  /// group-shared when its settings say so or its namespace directory is group-shared
  /// (``sharedDirectory``). A `settings` file that says private (rewritten by a member of the
  /// group) never makes the files of a group-shared mailbox private, which would lock the other
  /// members out (docs/SECURITY.md, "Permissions").
  var permissions: AppGroupMailboxPermissions { effective(settings).permissions }

  /// Whether a message file of `size` bytes may be read: up to the largest payload limit the
  /// mailbox ever had (re-reading the settings file first when `size` is over the known one), so
  /// a consumer never quarantines as oversized what a producer of this mailbox was allowed to
  /// write (C27).
  func acceptsMessageSize(_ size: Int) -> Bool {
    if size <= readLimit { return true }
    refreshSettings()
    return size <= readLimit
  }

  /// The most bytes a reader reads of one message file.
  var readLimit: Int { settingsCache.withLock { $0.settings.largestPayloadBytes } }

  /// Fails unless the spool was opened for writing.
  func requireWritable() throws {
    if directories.readOnly {
      throw SystemCallError(call: "open (read-only)", errno: .badFileDescriptor)
    }
  }

  /// The settings file in `namespace`, or nil when there is none.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` when the file is not readable settings
  ///   (`"settings: <why>"`, naming a member, never a value) or has a newer format
  ///   (`"settings format N"`); ``AppGroupMailboxError/ioFailure(_:)``.
  static func readSettings(_ namespace: Int32) throws -> SettingsCache? {
    let file: FileDescriptor
    do {
      file = try FileDescriptor.open(
        namespace, settingsName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, role: .settingsFile)
    } catch let error as SystemCallError where error.isNotFound {
      return nil
    } catch let error as SystemCallError where error.errno == .tooManySymbolicLinkLevels {
      // O_NOFOLLOW met a symbolic link: settings are never read through one.
      throw AppGroupMailboxError.invalidLimit("settings: a symbolic link, not a regular file")
    } catch let error as SystemCallError where error.errno == .noSuchAddressOrDevice {
      // A socket (or a device without a driver): open(2) refuses it before any type check.
      throw AppGroupMailboxError.invalidLimit("settings: not a regular file")
    } catch let error as SystemCallError {
      throw error.mailboxError("read settings")
    }
    let fd = file.rawValue
    let info = try mapIO("read settings") { try Syscall.fstat(fd) }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw AppGroupMailboxError.invalidLimit("settings: not a regular file")
    }
    let bytes = try mapIO("read settings") {
      try Syscall.pread(fd, limit: SettingsText.maxBytes + 1)
    }
    guard bytes.count <= SettingsText.maxBytes else {
      throw AppGroupMailboxError.invalidLimit(
        "settings: larger than \(SettingsText.maxBytes) bytes")
    }
    do {
      let decoded = try SettingsText.decode(bytes)
      return SettingsCache(
        settings: decoded.settings, stamp: FileStamp(info), otherMembers: decoded.otherMembers)
    } catch .futureFormat(let format) {
      throw AppGroupMailboxError.invalidLimit("settings format \(format)")
    } catch .unreadable(let why) {
      throw AppGroupMailboxError.invalidLimit("settings: \(why)")
    }
  }

  /// How long an opener waits for the settings of a namespace another process is creating.
  static let creatorGrace: Int64 = 2_000_000

  /// The settings of a namespace this opener did not create and found without settings: when
  /// its `state` file is still empty (a namespace being created: its creator writes settings
  /// right after), waits up to ``creatorGrace`` for them, re-reading every 5 ms, so the
  /// creator's settings apply whole rather than a mix of the creator's sharing mode and this
  /// opener's limits. Nil when `state` has counters (a mailbox made before settings files: the
  /// opener writes them) or the creator died before writing them. A rare path: only a race
  /// with a creation waits.
  static func awaitCreatorsSettings(_ directories: SpoolDirectories) throws -> SettingsCache? {
    guard let info = try? Syscall.fstat(directories.state), info.st_size == 0 else { return nil }
    func monotonicMicros() -> Int64 {
      var spec = timespec()
      clock_gettime(CLOCK_MONOTONIC, &spec)
      return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000
    }
    let deadline = monotonicMicros() + creatorGrace
    while monotonicMicros() < deadline {
      if let found = try readSettings(directories.namespace) { return found }
      usleep(5_000)
    }
    return try readSettings(directories.namespace)
  }

  /// The sharing mode a namespace directory shows: group-shared when it has the setgid bit and
  /// group write permission (02770, as a group-shared mailbox creates it), else private.
  static func sharing(ofDirectory fd: Int32) -> AppGroupMailboxPermissions {
    guard let info = try? Syscall.fstat(fd) else { return .private }
    let shared = info.st_mode & S_ISGID != 0 && info.st_mode & S_IWGRP != 0
    return shared ? .groupShared : .private
  }

  /// Re-reads the settings file when it changed since it was read (one fstatat(2) otherwise).
  /// A file that cannot be read keeps the settings known.
  /// - Returns: Whether the settings known are the file's as it was during the call (also when
  ///   there is none); false when it could not be looked at or read.
  @discardableResult
  func refreshSettings() -> Bool {
    let info: stat
    do {
      info = try Syscall.lstat(directories.namespace, Self.settingsName)
    } catch let error as SystemCallError where error.isNotFound {
      return true
    } catch {
      return false
    }
    let current = FileStamp(info)
    guard current != settingsCache.withLock({ $0.stamp }) else { return true }
    guard let fresh = try? Self.readSettings(directories.namespace) else { return false }
    settingsCache.withLock { $0 = fresh }
    return true
  }

  /// Writes the settings this spool holds as the mailbox's file, unless another process did
  /// first (then reads theirs). Used when a mailbox (or a spool made before settings files) has
  /// none: also one whose damaged file was moved away, so its `largestPayloadBytes` is raised
  /// to the largest message file stored in `pending/`, `claimed/` and `delayed/` (up to
  /// ``AppGroupMailboxLimits/payloadCeiling``): readers accept them all, rather than quarantine
  /// as oversized what an earlier, higher limit admitted.
  /// - Complexity: one listing of the three areas and an lstat(2) per entry.
  func createSettings() throws {
    var mine = settings
    mine.largestPayloadBytes = max(mine.largestPayloadBytes, largestStoredMessage())
    do {
      try writeSettings(mine, otherMembers: [], replacing: false)
    } catch let error as SystemCallError where error.errno == .fileExists {
      // A racing opener stored its settings first: those apply.
    } catch let error as SystemCallError {
      throw error.mailboxError("write settings")
    }
    if let stored = try Self.readSettings(directories.namespace) {
      settingsCache.withLock { $0 = stored }
    }
  }

  /// The size in bytes of the largest message file in `pending/`, `claimed/` and `delayed/`:
  /// a regular file under its area's message name, counted at most as the bytes it occupies on
  /// disk (a sparse file planted to look large counts as what it holds) and at most
  /// ``AppGroupMailboxLimits/payloadCeiling``; 0 when there is none (entries that cannot be
  /// looked at are left out).
  private func largestStoredMessage() -> Int {
    let areas: [(Int32, (String) -> Bool)] = [
      (directories.pending, { PendingName(parsing: $0) != nil }),
      (directories.claimed, { ClaimedName(parsing: $0) != nil }),
      (directories.delayed, { DelayedName(parsing: $0) != nil }),
    ]
    var largest = 0
    for (area, isMessageName) in areas {
      for entry in (try? Syscall.list(area)) ?? [] where isMessageName(entry.name) {
        guard let info = try? Syscall.lstat(area, entry.exactName),
          info.st_mode & S_IFMT == S_IFREG
        else { continue }
        let stored = min(Int(info.st_size), Int(info.st_blocks) * 512)
        largest = max(largest, min(stored, AppGroupMailboxLimits.payloadCeiling))
      }
    }
    return largest
  }

  /// Changes the stored settings under the namespace lock (the lock the depth bound uses):
  /// `change` gets the current stored settings; the result is validated, written to a
  /// temporary file, flushed and renamed over `settings`, and the directory flushed. The file's
  /// members this build does not know (hints a newer writer added) are written back as they
  /// were.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (nothing written; also `"sharing"`
  ///   when `change` altered the sharing mode, fixed at creation, and `"settings would be
  ///   larger than 4096 bytes"` when the new file with those members would be), or
  ///   ``AppGroupMailboxError/ioFailure(_:)``.
  func updateSettings(_ change: (inout AppGroupMailboxSettings) throws -> Void) throws
    -> AppGroupMailboxSettings
  {
    try mapIO("write settings") {
      try withStateLock { _ in
        // The change applies to the file as it is now: withStateLock refreshed the cache from
        // it. A file that refresh could not read (a newer format, or one damaged by hand) is
        // refused here with its reason, rather than overwritten with the values this spool
        // read earlier (a newer format's hold would be undone). Read again only then.
        if !refreshSettings(), let current = try Self.readSettings(directories.namespace) {
          settingsCache.withLock { $0 = current }
        }
        // The sharing mode as the mailbox has it; written back so, a file that said private
        // in a group-shared namespace is mended.
        var updated = effective(settings)
        let sharing = updated.permissions
        try change(&updated)
        guard updated.permissions == sharing else {
          throw AppGroupMailboxError.invalidLimit("sharing")
        }
        try updated.validate()
        updated.largestPayloadBytes = max(updated.largestPayloadBytes, updated.maxPayloadBytes)
        if updated != settings {
          let others = settingsCache.withLock { $0.otherMembers }
          try writeSettings(updated, otherMembers: others, replacing: true)
        }
        refreshSettings()
        return effective(settings)
      }
    }
  }

  /// Whether delivery is held, from the settings file as it is now (one fstatat(2), and a read
  /// when it changed since this spool last read it).
  var isHeld: Bool {
    refreshSettings()
    return settings.isHeld
  }

  /// Holds (`true`) or resumes (`false`) delivery: stores ``AppGroupMailboxSettings/isHeld``
  /// through ``updateSettings(_:)`` (under the lock, written atomically; nothing is written
  /// when it already has that value).
  /// - Returns: Whether the stored value changed.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)`` (operation `"write settings"`; errno
  ///   `EBADF` for a spool opened read-only).
  @discardableResult
  func setHeld(_ held: Bool) throws -> Bool {
    var changed = false
    _ = try updateSettings { settings in
      changed = settings.isHeld != held
      settings.isHeld = held
    }
    return changed
  }

  /// Writes `settings` with `otherMembers` (``SettingsText/encode(_:otherMembers:)``) to
  /// `tmp/`, flushes it, and renames it to `settings` (without replacing unless `replacing`),
  /// then flushes the namespace directory. Always flushed, whatever the durability: settings
  /// are rare and must survive.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` before anything is written when the
  ///   file would be larger than ``SettingsText/maxBytes``, which no reader reads.
  private func writeSettings(
    _ settings: AppGroupMailboxSettings, otherMembers: [UInt8], replacing: Bool
  ) throws {
    let text = SettingsText.encode(settings, otherMembers: otherMembers)
    guard text.count <= SettingsText.maxBytes else {
      throw AppGroupMailboxError.invalidLimit(
        "settings would be larger than \(SettingsText.maxBytes) bytes")
    }
    let temporary = KernelRandom.temporaryName(".tmp")
    let mode = settings.permissions.fileMode
    let file = try FileDescriptor.open(
      directories.tmp, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode,
      role: .settingsFile)
    let fd = file.rawValue
    var renamed = false
    defer {
      if !renamed { try? Syscall.unlink(directories.tmp, temporary) }
    }
    try Syscall.chmod(fd, mode)
    directories.adoptOwner(fd)
    try text.withUnsafeBytes { try Syscall.writeAll(fd, $0) }
    try Syscall.fsync(fd)
    if replacing {
      try Syscall.rename(directories.tmp, temporary, directories.namespace, Self.settingsName)
    } else {
      try Syscall.renameNoReplace(
        directories.tmp, temporary, directories.namespace, Self.settingsName)
    }
    renamed = true
    try Syscall.fsync(directories.namespace)
  }
}
