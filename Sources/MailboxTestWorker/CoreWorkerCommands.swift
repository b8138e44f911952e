import Foundation
import Glibc
import MailboxLocks

#if DEBUG
  @testable import AppGroupMailbox
#else
  import AppGroupMailbox
#endif

// Worker commands for the core tests (delivery, recovery, races). Each prints one line per
// result; lines a killed worker must have sent are written unbuffered.

/// Writes `line` to stdout at once (a process killed later must already have sent it).

/// The fixed id number `index` of an import: `00000000-0000-4000-8000-<index:12>`.
func importID(_ index: Int) -> UUID {
  let digits = String(index)
  let padded = String(repeating: "0", count: 12 - digits.count) + digits
  return UUID(uuidString: "00000000-0000-4000-8000-" + padded)!
}

private func durability(_ text: String) -> AppGroupMailboxDurability {
  text == "relaxed" ? .relaxed : .full
}

private func waitForFile(_ path: String) {
  while !FileManager.default.fileExists(atPath: path) { usleep(200) }
}

private func openMailbox<M: Codable & Sendable>(
  _ type: M.Type, _ container: String, _ namespace: String, claimTimeout: Double = 600,
  maxMessages: Int = 1_000_000, durabilityName: String = "full"
) throws -> AppGroupMailbox<M> {
  try AppGroupMailbox<M>(
    containerURL: URL(fileURLWithPath: container), namespace: namespace,
    limits: AppGroupMailboxLimits(maxMessages: maxMessages, claimTimeout: claimTimeout),
    durability: durability(durabilityName))
}

let coreWorkerCommands: [WorkerCommand] = [
  // core-produce CONTAINER NS FIRST COUNT DURABILITY: enqueues FIRST..<FIRST+COUNT.
  WorkerCommand(name: "core-produce") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1], durabilityName: args[4])
    let first = Int(args[2])!
    for value in first..<(first + Int(args[3])!) { try mailbox.enqueue(value) }
  },
  // core-consume CONTAINER NS DONEFILE BATCH: claims up to BATCH, prints "value count" and
  // acknowledges each, until DONEFILE exists and a claim made after that finds nothing.
  WorkerCommand(name: "core-consume") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1])
    let batch = Int(args[3])!
    while true {
      let done = FileManager.default.fileExists(atPath: args[2])
      let claims = try mailbox.claimPending(limit: batch)
      for claim in claims {
        print(claim.message, claim.deliveryCount)
        try claim.acknowledge()
      }
      if claims.isEmpty {
        if done { break }
        usleep(500)
      }
    }
  },
  // core-hold CONTAINER NS TIMEOUT LIMIT: claims up to LIMIT Ints, prints "value count" each,
  // then "held", and waits to be killed.
  WorkerCommand(name: "core-hold") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1], claimTimeout: Double(args[2])!)
    let claims = try mailbox.claimPending(limit: Int(args[3])!)
    for claim in claims { emitLine("\(claim.message) \(claim.deliveryCount)") }
    emitLine("held")
    while true { sleep(1000) }
  },
  // core-drain CONTAINER NS TIMEOUT COUNT: claims and acknowledges Ints until COUNT were
  // acknowledged, printing "value count" for each.
  WorkerCommand(name: "core-drain") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1], claimTimeout: Double(args[2])!)
    var remaining = Int(args[3])!
    while remaining > 0 {
      let claims = try mailbox.claimPending(limit: remaining)
      for claim in claims {
        emitLine("\(claim.message) \(claim.deliveryCount)")
        try claim.acknowledge()
      }
      remaining -= claims.count
      if claims.isEmpty { usleep(2_000) }
    }
  },
  // core-session CONTAINER NS TIMEOUT: a String consumer driven line by line from stdin:
  // `claim N` (N = 0: all) answers `claimed [message:count ...]`; `ack M`, `release M`,
  // `renew M` and `maintain` answer `ok` or `error <description>`; EOF ends it.
  WorkerCommand(name: "core-session") { args in
    let mailbox = try openMailbox(String.self, args[0], args[1], claimTimeout: Double(args[2])!)
    var held: [String: AppGroupMailbox<String>.Claim] = [:]
    while let line = readLine() {
      let words = line.split(separator: " ").map(String.init)
      guard let verb = words.first else { continue }
      do {
        switch verb {
        case "claim":
          let limit = Int(words[1])!
          let claims = try mailbox.claimPending(limit: limit == 0 ? nil : limit)
          for claim in claims { held[claim.message] = claim }
          emitLine(
            (["claimed"] + claims.map { "\($0.message):\($0.deliveryCount)" })
              .joined(separator: " "))
        case "ack": try held[words[1]]!.acknowledge(); emitLine("ok")
        case "release": try held[words[1]]!.release(); emitLine("ok")
        case "renew": try held[words[1]]!.renew(); emitLine("ok")
        case "maintain": try mailbox.performMaintenance(); emitLine("ok")
        default: emitLine("error unknown command")
        }
      } catch let error as AppGroupMailboxError {
        emitLine("error \(error)")
      }
    }
  },
  // core-import CONTAINER NS COUNT BASE_EPOCH_SECONDS [BLOCK_AFTER]: imports the fixed ids
  // 0..<COUNT (message = index) dated BASE + 30 s * index, printing "imported"; with
  // BLOCK_AFTER, it prints "blocked" just before publishing message BLOCK_AFTER (its temporary
  // file written and flushed) and waits to be killed.
  WorkerCommand(name: "core-import") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1], maxMessages: 100)
    let base = Double(args[3])!
    let run = {
      for index in 0..<Int(args[2])! {
        try mailbox.enqueue(
          index, id: importID(index),
          enqueuedAt: Date(timeIntervalSince1970: base + 30 * Double(index)))
      }
      emitLine("imported")
    }
    guard args.count > 4, let blockAfter = Int(args[4]) else { return try run() }
    #if DEBUG
      let pending = mailbox.spool.directories.pending
      let published = Locked(0)
      let recorder = SystemCallRecording.Recorder { call in
        guard call.name == "renameat2", call.targetDescriptor == pending else { return }
        if published.withLock({ count in
          defer { count += 1 }
          return count == blockAfter
        }) {
          emitLine("blocked")
          while true { sleep(1000) }
        }
      }
      try SystemCallRecording.recording(recorder, run)
    #else
      throw CocoaError(.featureUnsupported)
    #endif
  },
  // core-crash-enqueue CONTAINER NS VALUE: enqueues VALUE and kills itself with SIGKILL just
  // before the first system call after the rename that publishes it.
  WorkerCommand(name: "core-crash-enqueue") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1])
    #if DEBUG
      let pending = mailbox.spool.directories.pending
      let renamed = Locked(false)
      let recorder = SystemCallRecording.Recorder { call in
        if renamed.withLock({ $0 }) { kill(getpid(), SIGKILL) }
        if call.name == "renameat2", call.targetDescriptor == pending {
          renamed.withLock { $0 = true }
        }
      }
      try SystemCallRecording.recording(recorder) { _ = try mailbox.enqueue(Int(args[2])!) }
      emitLine("survived")
    #else
      throw CocoaError(.featureUnsupported)
    #endif
  },
  // core-maintain CONTAINER NS TIMEOUT GOFILE: waits for GOFILE, then runs maintenance.
  WorkerCommand(name: "core-maintain") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1], claimTimeout: Double(args[2])!)
    waitForFile(args[3])
    try mailbox.performMaintenance()
    emitLine("ok")
  },
  // core-churn-produce CONTAINER NS SECONDS FIRST: enqueues FIRST, FIRST+1, ... for SECONDS,
  // printing each value once its enqueue returned.
  WorkerCommand(name: "core-churn-produce") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1])
    let end = Date().addingTimeInterval(Double(args[2])!)
    var value = Int(args[3])!
    while Date() < end {
      try mailbox.enqueue(value)
      print(value)
      value += 1
    }
  },
  // core-churn-consume CONTAINER NS DONEFILE: claims 1 to 4 at a time; releases about one in
  // four claims (a message is released at most twice), acknowledges the rest printing their
  // values; stops when DONEFILE exists and a claim made after that finds nothing.
  WorkerCommand(name: "core-churn-consume") { args in
    let mailbox = try openMailbox(Int.self, args[0], args[1])
    while true {
      let done = FileManager.default.fileExists(atPath: args[2])
      let claims = try mailbox.claimPending(limit: Int.random(in: 1...4))
      for claim in claims {
        if claim.deliveryCount < 3 && Int.random(in: 0..<4) == 0 {
          try claim.release()
        } else {
          print(claim.message)
          try claim.acknowledge()
        }
      }
      if claims.isEmpty {
        if done { break }
        usleep(200)
      }
    }
  },
  // core-list CONTAINER NS DONEFILE: lists and counts pending/ and claimed/ in a tight loop
  // until DONEFILE exists; prints the number of listings.
  WorkerCommand(name: "core-list") { args in
    let base = URL(fileURLWithPath: args[0]).appendingPathComponent("AppGroupMailbox/\(args[1])")
    var listings = 0
    var counted = 0
    while !FileManager.default.fileExists(atPath: args[2]) {
      for area in ["pending", "claimed"] {
        counted += try FileManager.default.contentsOfDirectory(
          atPath: base.appendingPathComponent(area).path
        ).count
      }
      listings += 1
    }
    print(listings, counted)
  },
  // core-appgroup IDENTIFIER NS VALUE: opens the app group's mailbox from the environment,
  // enqueues VALUE and prints the namespace directory.
  WorkerCommand(name: "core-appgroup") { args in
    let mailbox = try AppGroupMailbox<String>(appGroupIdentifier: args[0], namespace: args[1])
    try mailbox.enqueue(args[2])
    print(mailbox.directoryURL.path)
  },
]
