import Glibc

extension Spool {
  /// Moves a claimed message into `quarantine/` as a dead letter (reason `deadletter`), as a
  /// claim does with a message past ``AppGroupMailboxLimits/maxDeliveryAttempts``; the depth
  /// counter is recounted afterwards. Reports ``AppGroupMailboxDiagnostic/deadLetterQuarantined``.
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when the claim is gone (finished or
  ///   recovered); ``AppGroupMailboxError/ioFailure(_:)`` when it could be neither moved nor
  ///   deleted (it stays claimed, and its lease runs out as usual), naming the refused rename
  ///   into `quarantine/` and its errno (`EPERM` when the file's own inode flags say immutable or
  ///   append-only, chattr(1)), or with `maxQuarantinedFiles` 0 the refused delete; `EIO` only
  ///   when no system call said why.
  func deadLetter(_ claimed: ClaimedName) throws {
    var diagnostics: [AppGroupMailboxDiagnostic] = []
    let outcome = quarantineEntry(
      from: directories.claimed, claimed.fileName, id: claimed.message.id, reason: .deadletter,
      diagnostics: &diagnostics)
    emit(diagnostics)
    switch outcome {
    case .left:
      try mapIO("dead-letter") { try withStateLock { $0 = try recount(stored: $0) } }
    case .gone:
      // ENOENT also comes from a quarantine/ deleted meanwhile: gone only if the file is.
      guard (try? Syscall.lstat(directories.claimed, claimed.fileName)) != nil else {
        throw AppGroupMailboxError.claimNoLongerExists
      }
      throw SystemCallError(
        call: "renameat2", errno: .noSuchFileOrDirectory, role: .claimedArea,
        targetRole: .quarantineArea
      ).mailboxError("dead-letter")
    case .stayed(let cause):
      let error =
        cause
        ?? SystemCallError(
          call: "renameat2", errno: .ioError, role: .claimedArea, targetRole: .quarantineArea)
      throw error.mailboxError("dead-letter")
    }
  }
}
