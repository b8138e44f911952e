import AppGroupMailbox
import Foundation
import Glibc

/// Commands the Python interop tests run beside `interop/python/agm_spool.py`, on untyped
/// mailboxes bounded to MAX messages (rejectNewest):
/// `interop-produce CONTAINER NS MAX PREFIX COUNT`: enqueues the JSON strings "PREFIX-0" ...
/// "PREFIX-(COUNT-1)" in order, retrying a full mailbox every 0.5 ms for up to 60 s.
/// `interop-consume CONTAINER NS MAX DONEFILE`: claims up to 4 at a time, prints each message's
/// bytes on a line and acknowledges it, until DONEFILE exists and a claim after that finds
/// nothing.
let interopCommands: [WorkerCommand] = [
  WorkerCommand(name: "interop-produce") { args in
    let mailbox = try AppGroupRawMailbox(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: Int(args[2])!))
    for index in 0..<Int(args[4])! {
      let payload = Data("\"\(args[3])-\(index)\"".utf8)
      let deadline = Date().addingTimeInterval(60)
      while true {
        do {
          try mailbox.enqueue(payload)
          break
        } catch AppGroupMailboxError.mailboxFull where Date() < deadline {
          usleep(500)
        }
      }
    }
  },
  WorkerCommand(name: "interop-consume") { args in
    let mailbox = try AppGroupRawMailbox(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: Int(args[2])!))
    while true {
      let done = FileManager.default.fileExists(atPath: args[3])
      let claims = try mailbox.claimPending(limit: 4)
      for claim in claims {
        emitLine(String(decoding: claim.payload, as: UTF8.self))
        try claim.acknowledge()
      }
      if claims.isEmpty {
        if done { break }
        usleep(500)
      }
    }
  },
]
