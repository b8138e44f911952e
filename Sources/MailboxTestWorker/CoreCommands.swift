import Foundation

#if DEBUG
  @testable import AppGroupMailbox
#else
  import AppGroupMailbox
#endif

/// `produce CONTAINER NAMESPACE FIRST COUNT [MAX]`: enqueues the integers FIRST..<FIRST+COUNT.
/// `consume CONTAINER NAMESPACE`: claims, prints and acknowledges until empty.
/// The `core-...` commands are in CoreWorkerCommands.swift.
let coreCommands: [WorkerCommand] =
  coreWorkerCommands + [
    WorkerCommand(name: "produce") { args in
      let limits = AppGroupMailboxLimits(maxMessages: args.count > 4 ? Int(args[4])! : 1_000_000)
      let mailbox = try AppGroupMailbox<Int>(
        containerURL: URL(fileURLWithPath: args[0]), namespace: args[1], limits: limits)
      let first = Int(args[2])!
      for value in first..<(first + Int(args[3])!) { try mailbox.enqueue(value) }
    },
    WorkerCommand(name: "consume") { args in
      let mailbox = try AppGroupMailbox<Int>(
        containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
        limits: AppGroupMailboxLimits(maxMessages: 1_000_000))
      while true {
        let claims = try mailbox.claimPending(limit: 1)
        if claims.isEmpty { break }
        for claim in claims {
          print(claim.message)
          try claim.acknowledge()
        }
      }
    },
  ]
