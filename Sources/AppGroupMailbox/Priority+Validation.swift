// Apart from Priority.swift, which the parsers' fuzz target (scripts/fuzz) compiles without
// the error types.
extension AppGroupMailboxPriority {
  /// `level` when it lies in ``levels``.
  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` naming `priority` and the accepted
  ///   range (`"priority (accepted: 0...9)"`) for any other value.
  static func validated(_ level: Int) throws -> Int {
    guard levels.contains(level) else {
      throw AppGroupMailboxError.invalidLimit("priority (accepted: \(levels))")
    }
    return level
  }
}
