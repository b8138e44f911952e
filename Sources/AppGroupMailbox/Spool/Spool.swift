import Foundation
import Glibc
import Synchronization

/// Everything a spool needs to know besides its directories.
struct SpoolConfiguration: Sendable {
  var limits: AppGroupMailboxLimits
  var overflowPolicy: AppGroupMailboxOverflowPolicy
  var durability: AppGroupMailboxDurability
  var permissions: AppGroupMailboxPermissions
  /// The consumer's message type; a message with another non-empty type is quarantined. Nil
  /// accepts every type (untyped tools).
  var expectedMessageType: String?
  var clock: MailboxClock
  var diagnostic: (@Sendable (AppGroupMailboxDiagnostic) -> Void)?
  /// Called (outside every lock) after a message became pending: an enqueue, a release or a
  /// recovered claim. The watcher issue posts wake-ups from here.
  var onPending: (@Sendable () -> Void)?

  /// Seconds a temporary file may sit in `tmp/` before it counts as a crashed writer's leftover.
  static let temporaryFileGrace: TimeInterval = 900
}

/// The byte-level mailbox: one namespace's files and the protocol that keeps them consistent.
/// ``AppGroupMailbox`` adds typed encoding on top. Safe from many threads and processes.
final class Spool: Sendable {
  let directories: SpoolDirectories
  let configuration: SpoolConfiguration
  /// In-process exclusion around the flock (threads of one process share its open file
  /// description, so flock(2) alone does not exclude them), and whether this instance has
  /// checked the state file against the listing yet.
  private let lock = Mutex<Bool>(false)
  /// The clock reading of the last recovery sweep.
  let lastSweep = Mutex<Int64>(Int64.min)
  /// The newest implicit `enqueuedAt` this process has seen, to clamp before taking the lock.
  let newestImplicitSeen = Mutex<Int64>(0)
  /// Pending names seen with more than one link, and when first seen (microseconds).
  let linkedSeen = Mutex<[String: Int64]>([:])
  /// Pending names known between claims (see ``PendingIndex``).
  let pendingIndex = PendingIndex()

  init(container: URL, namespace: String, configuration: SpoolConfiguration) throws {
    self.directories = try SpoolDirectories(
      container: container, namespace: namespace, permissions: configuration.permissions)
    self.configuration = configuration
  }

  var limits: AppGroupMailboxLimits { configuration.limits }
  var now: Int64 { configuration.clock.nowMicros() }
  var isDurable: Bool { configuration.durability == .full }

  /// Runs `body` holding the namespace lock with the current counters; writes them back when
  /// `body` changed them. The first use in this instance rebuilds the counters from a listing.
  func withStateLock<T: Sendable>(_ body: (inout SpoolCounters) throws -> T) throws -> T {
    try lock.withLock { validated -> T in
      try Syscall.lock(directories.state, LOCK_EX)
      defer { try? Syscall.lock(directories.state, LOCK_UN) }
      let stored = SpoolCounters(
        line: try Syscall.pread(directories.state, limit: SpoolCounters.lineLength))
      var counters: SpoolCounters
      if let stored, validated {
        counters = stored
      } else {
        counters = try recount(stored: stored)
        validated = true
      }
      let before = stored
      let result = try body(&counters)
      if counters != before {
        try counters.line.withUnsafeBytes {
          try Syscall.pwriteAll(directories.state, $0, at: 0)
        }
      }
      return result
    }
  }

  /// Counters rebuilt from the names in `pending/` and `claimed/`, never below what `stored`
  /// says for the sequence and the newest time. Call with the lock held.
  /// - Complexity: O(n) in the number of entries.
  func recount(stored: SpoolCounters?) throws -> SpoolCounters {
    var depth = 0
    var sequence = stored?.sequence ?? 0
    var newest = stored?.newestImplicitMicros ?? 0
    for entry in try Syscall.list(directories.pending) {
      guard let name = PendingName(parsing: entry.name) else { continue }
      depth += 1
      sequence = max(sequence, name.key.sequence)
      if stored == nil { newest = max(newest, name.key.micros) }
    }
    for entry in try Syscall.list(directories.claimed) {
      guard let name = ClaimedName(parsing: entry.name) else { continue }
      depth += 1
      sequence = max(sequence, name.message.key.sequence)
      if stored == nil { newest = max(newest, name.message.key.micros) }
    }
    return SpoolCounters(sequence: sequence, depth: depth, newestImplicitMicros: newest)
  }

  /// Lowers the depth counter by `count` after messages left the mailbox.
  func decrementDepth(_ count: Int = 1) throws {
    guard count > 0 else { return }
    try withStateLock { counters in counters.depth = max(0, counters.depth - count) }
  }

  /// Delivers diagnostics; call only outside every lock.
  func emit(_ events: [AppGroupMailboxDiagnostic]) {
    guard let sink = configuration.diagnostic else { return }
    for event in events { sink(event) }
  }

  /// Flushes a directory when the durability asks for it.
  func flushDirectory(_ fd: Int32) throws {
    if isDurable { try Syscall.fsync(fd) }
  }

  /// Sorted pending names. - Complexity: O(n log n) in the pending entries.
  func pendingNames() throws -> [(PendingName, DirectoryEntry)] {
    var names: [(PendingName, DirectoryEntry)] = []
    for entry in try Syscall.list(directories.pending) {
      if let name = PendingName(parsing: entry.name) { names.append((name, entry)) }
    }
    names.sort { $0.0.key < $1.0.key }
    return names
  }
}

/// Maps low-level failures to the public error, naming the operation.
@inline(__always)
func mapIO<T>(_ operation: String, _ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as SystemCallError {
    throw error.mailboxError(operation)
  }
}
