import AppGroupMailbox
import Foundation
import Glibc

/// `soak CONTAINER SEED SECONDS LEDGER`: random operations on one mailbox for SECONDS, writing a
/// ledger line after each step whose outcome a checker needs: `T p` before enqueueing payload p,
/// `E p` after the enqueue returned, `F p` when it was refused (full), `R p` before re-importing
/// p under its id (which adds it again if it was acknowledged meanwhile: no tombstones), `a p`
/// before acknowledging, `A p` after the acknowledge returned, `N p` when it found the claim
/// recovered by another process. An `a` without `A` or `N` is an acknowledge a kill interrupted. The soak test kills and restarts these workers at random.
let soakCommands: [WorkerCommand] = [
  WorkerCommand(name: "soak") { args in
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: "soak",
      limits: .init(maxMessages: SoakSettings.maxMessages, claimTimeout: 1))
    var random = SoakRandom(seed: UInt64(args[1])! ^ UInt64(getpid()))
    let end = Date().addingTimeInterval(Double(args[2])!)
    let ledger = try FileHandle(forWritingTo: URL(fileURLWithPath: args[3]))
    ledger.seekToEndOfFile()
    func note(_ line: String) { ledger.write(Data((line + "\n").utf8)) }
    var held: [AppGroupMailbox<String>.Claim] = []
    var sent: [String] = []
    var counter = 0
    while Date() < end {
      switch random.next() % 10 {
      case 0...3:
        counter += 1
        let payload = "p\(getpid())-\(counter)"
        note("T \(payload)")
        do {
          try mailbox.enqueue(payload, id: SoakSettings.id(for: payload))
          note("E \(payload)")
          sent.append(payload)
        } catch AppGroupMailboxError.mailboxFull {
          note("F \(payload)")
        }
      case 4 where !sent.isEmpty:
        // Re-import an id this process already enqueued: must never make a second copy.
        let payload = sent[Int(random.next() % UInt64(sent.count))]
        note("R \(payload)")
        do {
          try mailbox.enqueue(payload, id: SoakSettings.id(for: payload))
        } catch AppGroupMailboxError.mailboxFull {}
      case 5...7:
        held += try mailbox.claimPending(limit: Int(random.next() % 3) + 1)
      case 8:
        try mailbox.performMaintenance()
      default:
        break
      }
      while let claim = held.popLast(), random.next() % 4 != 0 {
        do {
          switch random.next() % 6 {
          case 0...2:
            note("a \(claim.message)")
            do {
              try claim.acknowledge()
            } catch AppGroupMailboxError.claimNoLongerExists {
              note("N \(claim.message)")
              throw AppGroupMailboxError.claimNoLongerExists
            }
            note("A \(claim.message)")
          case 3: try claim.release()
          case 4: try claim.release(retryAfter: 0.1)
          default:
            try claim.renew()
            held.insert(claim, at: 0)
          }
        } catch AppGroupMailboxError.claimNoLongerExists {
          // Recovered by another process after the lease ran out: at least once, not an error.
        }
      }
    }
  }
]

/// Settings shared by the soak worker and its test.
enum SoakSettings {
  static let maxMessages = 200

  /// A stable id per payload `p<pid>-<n>`, so a re-import names the same message: the pid and
  /// the counter written into a version-4-shaped UUID.
  static func id(for payload: String) -> UUID {
    let parts = payload.dropFirst().split(separator: "-")
    let pid = UInt64(parts[0])!
    let counter = UInt64(parts[1])!
    let text = String(format: "%08llx-0000-4000-8000-%012llx", pid, counter)
    return UUID(uuidString: text)!
  }
}

/// SplitMix64, seeded per process.
struct SoakRandom {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
