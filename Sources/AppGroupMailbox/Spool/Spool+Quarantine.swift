import Foundation
import Glibc
import Synchronization

extension Spool {
  /// Moves the entry `name` of `directory` (the entry itself, never a link's target) into
  /// `quarantine/` under a unique name, or deletes it when the bound is 0; then trims quarantine
  /// to its bound. `counted` says whether the entry counted toward the depth. A vanished entry is
  /// skipped.
  func quarantine(
    from directory: Int32, _ name: String, id: UUID?, reason: QuarantineReason, counted: Bool,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) throws {
    try mapIO("quarantine") {
      let target = QuarantineName(
        micros: now, reason: reason, id: id, nonce: UInt32.random(in: .min ... .max))
      func move() throws {
        if limits.maxQuarantinedFiles == 0 {
          try removeEntry(directory, name)
        } else {
          try Syscall.renameNoReplace(directory, name, directories.quarantine, target.fileName)
        }
      }
      if counted {
        guard try removeCounted({ try move() }) else { return }
      } else {
        do {
          try move()
        } catch let error as SystemCallError where error.isNotFound {
          return
        }
      }
      diagnostics.append(reason.diagnostic)
      try trimQuarantine(diagnostics: &diagnostics)
    }
  }

  /// Deletes the oldest quarantined entries beyond ``AppGroupMailboxLimits/maxQuarantinedFiles``
  /// (names sort by quarantine time; foreign names go first).
  /// - Complexity: O(n log n) in the quarantined entries.
  func trimQuarantine(diagnostics: inout [AppGroupMailboxDiagnostic]) throws {
    let entries = try Syscall.list(directories.quarantine).map(\.name).sorted { lhs, rhs in
      let left = QuarantineName(parsing: lhs) != nil
      let right = QuarantineName(parsing: rhs) != nil
      return left == right ? lhs < rhs : !left
    }
    let excess = entries.count - limits.maxQuarantinedFiles
    guard excess > 0 else { return }
    for name in entries.prefix(excess) {
      do {
        try removeEntry(directories.quarantine, name)
        diagnostics.append(.quarantinedFileDiscarded)
      } catch let error as SystemCallError where error.isNotFound {
        continue
      }
    }
  }

  /// Removes an entry of any type without following links: a directory is emptied depth-first
  /// through descriptors opened with `O_NOFOLLOW`, so nothing outside is ever touched.
  func removeEntry(_ directory: Int32, _ name: String, depth: Int = 0) throws {
    do {
      try Syscall.unlink(directory, name)
      return
    } catch let error as SystemCallError where error.errno == EISDIR || error.errno == EPERM {
      guard depth < 32 else { throw error }
    }
    let child = try Syscall.open(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    defer { Syscall.close(child) }
    for entry in try Syscall.list(child) {
      try removeEntry(child, entry.name, depth: depth + 1)
    }
    try Syscall.removeDirectory(directory, name)
  }
}
