import AppGroupMailbox
import Foundation

// Worker commands for priority levels (Tests/AppGroupMailboxTests/Priority/PriorityTests.swift).

let priorityCommands: [WorkerCommand] = [
  // priority-produce CONTAINER NS READY GO PRODUCER COUNT: creates READY, waits for GO, then
  // enqueues COUNT messages "P<PRODUCER>-<i>" (JSON strings) at level (7 * i + PRODUCER) % 10,
  // printing "<level> <payload>" for each once its enqueue returned.
  WorkerCommand(name: "priority-produce") { args in
    let mailbox = try rawMailbox(args, maxMessages: 10_000)
    guard let producer = Int(args[4]), let count = Int(args[5]) else {
      throw WorkerTimeout(what: "arguments \(args)")
    }
    try startTogether(ready: args[2], go: args[3])
    for index in 0..<count {
      let level = (7 * index + producer) % 10
      let text = "P\(producer)-\(index)"
      try mailbox.enqueue(Data("\"\(text)\"".utf8), priority: level)
      emitLine("\(level) \(text)")
    }
  },
  // priority-consume CONTAINER NS: claims one message at a time until none is pending,
  // acknowledging each and printing its payload (a JSON string) without the quotes.
  WorkerCommand(name: "priority-consume") { args in
    let mailbox = try rawMailbox(args, maxMessages: 10_000)
    while let claim = try mailbox.claimPending(limit: 1).first {
      emitLine(String(decoding: claim.payload, as: UTF8.self).trimmingCharacters(in: ["\""]))
      try claim.acknowledge()
    }
  },
]
