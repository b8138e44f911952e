import Foundation
import Glibc

@testable import AppGroupMailbox

/// What the ledgers of the soak and spool-fuzz workers say (the line kinds are listed where the
/// workers write them: `soakCommands` and `spoolFuzzCommands` in MailboxTestWorker). A line cut
/// short by a SIGKILL is skipped.
struct SoakLedger {
  /// Payloads an enqueue was started for (`T`, `I`, `Y`).
  var tried = Set<String>()
  /// Payloads whose enqueue returned (`E`).
  var enqueued = Set<String>()
  /// Payloads re-imported under their id (`R`).
  var reimported = Set<String>()
  /// Every acknowledge that returned, in ledger order (`A`).
  var acknowledged: [String] = []
  /// Acknowledges started (`a`) and those that found the claim recovered (`N`), per payload.
  var acknowledging: [String: Int] = [:]
  var settled: [String: Int] = [:]
  /// The wall clock just after a plain enqueue returned (`W`), in microseconds.
  var plainReturned: [String: Int64] = [:]
  /// Every delivery (`C`): payload, delivery count, `enqueuedAt` in microseconds.
  var claims: [(payload: String, count: Int, enqueuedAt: Int64)] = []
  /// Ids of quarantined files requeued (`Q`) or purged (`P`).
  var requeuedIDs = Set<String>()
  var purgedIDs = Set<String>()
  /// Errors an operation should never have thrown (`X`), whole lines.
  var errors: [String] = []

  /// Reads every file in `directory`.
  init(directory: URL) throws {
    for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() {
      try read(directory.appendingPathComponent(file))
    }
  }

  init() {}

  /// Adds the lines of one ledger file.
  mutating func read(_ file: URL) throws {
    let text = try String(decoding: Data(contentsOf: file), as: UTF8.self)
    // The last line may be cut by a SIGKILL: only lines that end count.
    for line in text.split(separator: "\n", omittingEmptySubsequences: true)
    where text.hasSuffix("\n") || line.endIndex != text.endIndex {
      let parts = line.split(separator: " ").map(String.init)
      guard parts.count >= 2 else { continue }
      let payload = parts[1]
      switch (parts[0], parts.count) {
      case ("T", 2), ("I", 2), ("Y", 2): tried.insert(payload)
      case ("E", 2): enqueued.insert(payload)
      case ("A", 2): acknowledged.append(payload)
      case ("R", 2): reimported.insert(payload)
      case ("a", 2): acknowledging[payload, default: 0] += 1
      case ("N", 2): settled[payload, default: 0] += 1
      case ("W", 3): plainReturned[payload] = Int64(parts[2])
      case ("C", 4):
        if let count = Int(parts[2]), let micros = Int64(parts[3]) {
          claims.append((payload, count, micros))
        }
      case ("Q", 2): requeuedIDs.insert(payload)
      case ("P", 2): purgedIDs.insert(payload)
      case ("X", _): errors.append(String(line))
      default: break
      }
    }
  }

  /// Payloads whose acknowledge a SIGKILL interrupted (an `a` line with no outcome): the message
  /// may be gone without the ledger saying so.
  var interrupted: Set<String> {
    let done = Dictionary(grouping: acknowledged, by: { $0 }).mapValues(\.count)
    return Set(
      acknowledging.filter { payload, count in
        count > settled[payload, default: 0] + done[payload, default: 0]
      }.keys)
  }
}

/// Sampling the depth bound from the names, as the soak and spool-fuzz tests do while workers run.
enum DepthSample {
  /// The ids in `areas` (pending, claimed, delayed) accepted by `counts`, each counted once: the
  /// areas are listed one after another while messages move between them, so a message can show
  /// up twice in one sample (a duplicate file is checked at rest).
  ///
  /// With `lock` (the namespace's `state` file), the sample holds its lock as producers do, so no
  /// message enters or leaves while the areas are listed: without it, a message acknowledged
  /// after `pending/` was listed and a delayed enqueue listed later in `delayed/` count as two.
  static func depth(
    of areas: [String], lock: String? = nil, counting counts: (UUID) -> Bool = { _ in true }
  ) -> Int {
    let descriptor = lock.map { open($0, O_RDONLY | O_CLOEXEC) } ?? -1
    if descriptor >= 0 { flock(descriptor, LOCK_EX) }
    defer { if descriptor >= 0 { close(descriptor) } }
    var ids = Set<UUID>()
    for area in areas {
      for name in (try? FileManager.default.contentsOfDirectory(atPath: area)) ?? [] {
        if let id = PendingName(parsing: name)?.id ?? ClaimedName(parsing: name)?.message.id
          ?? DelayedName(parsing: name)?.message.id, counts(id)
        {
          ids.insert(id)
        }
      }
    }
    return ids.count
  }
}
