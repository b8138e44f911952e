@_spi(Testing) import AppGroupMailbox
import Foundation
import Glibc

/// `spool-fuzz CONTAINER NAMESPACE MAX_MESSAGES LIFETIME MAX_QUARANTINED SEED WORKER OPERATIONS
/// CRASH LEDGER`: OPERATIONS random operations on NAMESPACE (with those limits), chosen by SEED alone, with payloads `p<WORKER>-<n>` (ids from
/// ``SoakSettings/id(for:)``). With CRASH >= 0 the worker arms ``CrashPoint`` before operation
/// CRASH, so it dies in the middle of a mutating step. It writes the soak ledger (see
/// `soakCommands`) plus: `I p` before importing p with an explicit date, `Y p` before a delayed
/// enqueue (each followed by `E p` when it returned), `W p micros` after a plain enqueue
/// returned (the wall clock then), `C p n micros` for each claim (delivery count, `enqueuedAt`),
/// `Q id` before requeueing a quarantined file of that id, `P id` before purging one, and
/// `X operation error` for any error an operation should never throw (anything but
/// `mailboxFull` and `claimNoLongerExists`). The spool-state fuzz test plants hostile entries
/// meanwhile and checks the ledgers against what is left.
let spoolFuzzCommands: [WorkerCommand] = [
  WorkerCommand(name: "spool-fuzz") { args in
    guard args.count == 10, let maxMessages = Int(args[2]), let lifetime = Double(args[3]),
      let maxQuarantined = Int(args[4]), let seed = UInt64(args[5]), let operations = Int(args[7]),
      let crash = Int(args[8])
    else { throw CocoaError(.featureUnsupported) }
    var random = SoakRandom(seed: seed)
    let ledger = try FileHandle(forWritingTo: URL(fileURLWithPath: args[9]))
    ledger.seekToEndOfFile()
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: .init(
        maxMessages: maxMessages, messageLifetime: lifetime,
        claimTimeout: 0.2 + Double(random.next() % 8) / 10,
        maxQuarantinedFiles: maxQuarantined))
    var fuzz = SpoolFuzzWorker(mailbox: mailbox, worker: args[6], ledger: ledger)
    for index in 0..<operations {
      if index == crash { CrashPoint.arm(afterMutations: Int(random.next() % 6)) }
      fuzz.step(&random)
    }
    CrashPoint.disarm()
  }
]

/// One worker's state: the mailbox, the claims it holds, the payloads it enqueued.
struct SpoolFuzzWorker {
  let mailbox: AppGroupMailbox<String>
  let worker: String
  let ledger: FileHandle
  var held: [AppGroupMailbox<String>.Claim] = []
  var sent: [String] = []
  var counter = 0

  func note(_ line: String) { ledger.write(Data((line + "\n").utf8)) }

  static var nowMicros: Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

  /// Runs `body`; records an `X` line for any error but the expected ones.
  func guarded(_ operation: String, _ body: () throws -> Void) {
    do {
      try body()
    } catch AppGroupMailboxError.mailboxFull, AppGroupMailboxError.claimNoLongerExists {
    } catch {
      note("X \(operation) \(String(describing: error).replacingOccurrences(of: "\n", with: " "))")
    }
  }

  mutating func nextPayload() -> String {
    counter += 1
    return "p\(worker)-\(counter)"
  }

  /// One random operation.
  mutating func step(_ random: inout SoakRandom) {
    switch random.next() % 16 {
    case 0...2: enqueue(kind: "T", &random)
    case 3: enqueue(kind: "I", &random)
    case 4: enqueue(kind: "Y", &random)
    case 5 where !sent.isEmpty:
      let payload = sent[Int(random.next() % UInt64(sent.count))]
      note("R \(payload)")
      guarded("reimport") { try mailbox.enqueue(payload, id: SoakSettings.id(for: payload)) }
    case 6...8:
      let limit = Int(random.next() % 3) + 1
      guarded("claim") {
        let claims = try mailbox.claimPending(limit: limit)
        for claim in claims {
          let micros = Int64(claim.enqueuedAt.timeIntervalSince1970 * 1_000_000)
          note("C \(claim.message) \(claim.deliveryCount) \(micros)")
        }
        held += claims
      }
    case 9...12 where !held.isEmpty:
      finish(held.remove(at: Int(random.next() % UInt64(held.count))), &random)
    case 13: guarded("maintenance") { try mailbox.performMaintenance() }
    case 14, 15: repairQuarantine(purge: random.next() % 3 == 0, &random)
    default: break
    }
  }

  /// `T`: a plain enqueue; `I`: an import with an id and a date within a month of now; `Y`: an
  /// enqueue due in up to 1.5 s.
  mutating func enqueue(kind: String, _ random: inout SoakRandom) {
    let payload = nextPayload()
    let id = SoakSettings.id(for: payload)
    let offset = Double(Int64(random.next() % 5_184_000) - 2_592_000)
    let delay = Double(random.next() % 1_500) / 1_000
    // Every priority level, from the id (the random stream stays as it was).
    let level = Int(id.uuid.0 % 10)
    note("\(kind) \(payload)")
    do {
      switch kind {
      case "I":
        try mailbox.enqueue(
          payload, id: id, enqueuedAt: Date(timeIntervalSinceNow: offset), priority: level)
      case "Y":
        _ = try mailbox.enqueue(
          payload, id: id, notBefore: Date(timeIntervalSinceNow: delay), priority: level)
      default: try mailbox.enqueue(payload, id: id, priority: level)
      }
      note("E \(payload)")
      if kind == "T" { note("W \(payload) \(Self.nowMicros)") }
      sent.append(payload)
    } catch AppGroupMailboxError.mailboxFull {
      note("F \(payload)")
    } catch {
      note("X enqueue-\(kind) \(error)")
    }
  }

  /// Acknowledges, releases (now or later) or renews one held claim.
  mutating func finish(_ claim: AppGroupMailbox<String>.Claim, _ random: inout SoakRandom) {
    switch random.next() % 6 {
    case 0...2:
      note("a \(claim.message)")
      do {
        try claim.acknowledge()
        note("A \(claim.message)")
      } catch AppGroupMailboxError.claimNoLongerExists {
        note("N \(claim.message)")
      } catch {
        note("X acknowledge \(error)")
      }
    case 3: guarded("release") { try claim.release() }
    case 4:
      let delay = Double(random.next() % 1_000) / 1_000
      guarded("release-delay") { try claim.release(retryAfter: delay) }
    default:
      guarded("renew") {
        try claim.renew()
        held.insert(claim, at: 0)
      }
    }
  }

  /// Requeues (when its name gives its id) or purges one quarantined file, noting its id first.
  func repairQuarantine(purge: Bool, _ random: inout SoakRandom) {
    let pick = random.next()
    guarded(purge ? "purge" : "requeue") {
      // Only files whose name gives the id are requeued: the ledger must name what comes back.
      let entries = try mailbox.inspector.entries(in: [.quarantined]).filter {
        purge || $0.id != nil
      }
      guard !entries.isEmpty else { return }
      let entry = entries[Int(pick % UInt64(entries.count))]
      note("\(purge ? "P" : "Q") \(entry.id?.uuidString.lowercased() ?? "unknown")")
      if purge {
        _ = try mailbox.inspector.purgeQuarantined(entry.fileName)
      } else {
        _ = try mailbox.inspector.requeueQuarantined(entry.fileName)
      }
    }
  }
}
