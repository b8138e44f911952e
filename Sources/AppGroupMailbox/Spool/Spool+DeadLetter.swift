import Glibc

extension Spool {
  /// Moves a claimed message into `quarantine/` as a dead letter (reason `deadletter`), as a
  /// claim does with a message past ``AppGroupMailboxLimits/maxDeliveryAttempts``; the depth
  /// counter is recounted afterwards. Reports ``AppGroupMailboxDiagnostic/deadLetterQuarantined``.
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when the claim is gone (finished or
  ///   recovered); ``AppGroupMailboxError/ioFailure(_:)`` when it could be neither moved nor
  ///   deleted (it stays claimed, and its lease runs out as usual): errno `EPERM` when the
  ///   file's own inode flags say immutable or append-only (chattr(1)), else `EIO`.
  func deadLetter(_ claimed: ClaimedName) throws {
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    let moved = quarantine(
      from: directories.claimed, claimed.fileName, id: claimed.message.id, reason: .deadletter,
      diagnostics: &diagnostics)
    emit(diagnostics)
    guard moved else {
      do {
        _ = try Syscall.lstat(directories.claimed, claimed.fileName)
      } catch let error as SystemCallError where error.isNotFound {
        throw AppGroupMailboxError.claimNoLongerExists
      } catch let error as SystemCallError {
        throw error.mailboxError("dead-letter")
      }
      // The refusal's cause when the file's own flags explain it (chattr +i, +a), else EIO.
      let flagged = Self.isFlagged(directories.claimed, claimed.fileName)
      throw SystemCallError(
        call: "renameat2", errno: flagged ? .notPermitted : .ioError, role: .claimedArea,
        targetRole: .quarantineArea
      ).mailboxError("dead-letter")
    }
    try mapIO("dead-letter") { try withStateLock { $0 = try recount(stored: $0) } }
  }
}
