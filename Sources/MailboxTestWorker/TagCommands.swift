import AppGroupMailbox
import Foundation

/// A `private` message type: its qualified name holds a runtime address that changes on every
/// launch (`MailboxTestWorker.(unknown context at $...).PrivateJob`).
private struct PrivateJob: Codable, Sendable {
  var number: Int
}

/// Commands of the message-tag tests (each run is a new launch of this binary):
/// `private-produce CONTAINER NS FIRST COUNT`: enqueues `PrivateJob`s FIRST..<FIRST+COUNT with
/// the default tag and prints the tag and the type's qualified name.
/// `private-consume CONTAINER NS`: claims `PrivateJob`s until none is left, prints each number,
/// acknowledges.
let tagCommands: [WorkerCommand] = [
  WorkerCommand(name: "private-produce") { args in
    let mailbox = try AppGroupMailbox<PrivateJob>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1])
    let first = Int(args[2]) ?? 0
    for number in first..<(first + (Int(args[3]) ?? 0)) {
      try mailbox.enqueue(PrivateJob(number: number))
    }
    emitLine(mailbox.messageType)
    emitLine(String(reflecting: PrivateJob.self))
  },
  WorkerCommand(name: "private-consume") { args in
    let mailbox = try AppGroupMailbox<PrivateJob>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1])
    while let claim = try mailbox.claimPending(limit: 1).first {
      emitLine(String(claim.message.number))
      try claim.acknowledge()
    }
  },
]
