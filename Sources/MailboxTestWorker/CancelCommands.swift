import AppGroupMailbox
import Foundation
import Glibc

// Worker commands for the cancel race (Tests/AppGroupMailboxTests/Core/CancelTests.swift).

let cancelCommands: [WorkerCommand] = [
  // cancel-race-claim CONTAINER NS READY STOP: claims Ints one at a time as fast as it can,
  // printing each claimed id and keeping the claim (never acknowledging); creates READY after
  // its first claim call; after STOP exists, a claim that finds nothing ends it.
  WorkerCommand(name: "cancel-race-claim") { args in
    let mailbox = try AppGroupMailbox<Int>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: 1_000_000, claimTimeout: 3_600),
      durability: .relaxed)
    var held: [AppGroupMailbox<Int>.Claim] = []
    var ready = false
    while true {
      let stopping = FileManager.default.fileExists(atPath: args[3])
      let claims = try mailbox.claimPending(limit: 1)
      for claim in claims { emitLine(claim.id.uuidString.lowercased()) }
      held += claims
      if !ready {
        guard FileManager.default.createFile(atPath: args[2], contents: nil) else {
          throw WorkerTimeout(what: "create \(args[2])")
        }
        ready = true
      }
      if claims.isEmpty, stopping { break }
    }
  },
  // cancel-race-cancel CONTAINER NS READY STOP ROUNDS: after READY exists, for each round
  // enqueues one Int under a fresh id, lets the scheduler run 0 to 63 times (so the race window
  // is swept), cancels it and prints "<id> <outcome>"; creates STOP at the end.
  WorkerCommand(name: "cancel-race-cancel") { args in
    let mailbox = try AppGroupMailbox<Int>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: 1_000_000), durability: .relaxed)
    try awaitFile(args[2])
    for round in 0..<Int(args[4])! {
      let id = try mailbox.enqueue(round)
      for _ in 0..<Int.random(in: 0..<64) { sched_yield() }
      let outcome: String
      switch try mailbox.cancel(id: id) {
      case .cancelled: outcome = "cancelled"
      case .claimed: outcome = "claimed"
      case .quarantined: outcome = "quarantined"
      case .notFound: outcome = "notFound"
      }
      emitLine("\(id.uuidString.lowercased()) \(outcome)")
    }
    guard FileManager.default.createFile(atPath: args[3], contents: nil) else {
      throw WorkerTimeout(what: "create \(args[3])")
    }
  },
]
