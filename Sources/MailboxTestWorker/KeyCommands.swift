import AppGroupMailbox
import Foundation
import Glibc

// Worker commands for replace by key (Tests/AppGroupMailboxTests/Key/KeyRaceTests.swift).

let keyCommands: [WorkerCommand] = [
  // key-produce CONTAINER NS READY GO PRODUCER KEYS COUNT POLICY: creates READY, waits for GO,
  // then enqueues COUNT messages "<PRODUCER>-<i>" (JSON strings) under key "k<i % KEYS>" with
  // POLICY (keep or replace), printing "<key> <outcome> <id> <payload>" for each.
  WorkerCommand(name: "key-produce") { args in
    let mailbox = try rawMailbox(args, maxMessages: 1_000)
    guard let policy = AppGroupMailboxKeyPolicy(rawValue: args[7]) else {
      throw WorkerTimeout(what: "policy \(args[7])")
    }
    try startTogether(ready: args[2], go: args[3])
    let keys = Int(args[5])!
    for index in 0..<Int(args[6])! {
      let key = "k\(index % keys)"
      let text = "\(args[4])-\(index)"
      let outcome = try mailbox.enqueue(Data("\"\(text)\"".utf8), key: key, onConflict: policy)
      let name: String
      switch outcome {
      case .enqueued: name = "enqueued"
      case .kept: name = "kept"
      case .replaced: name = "replaced"
      }
      emitLine("\(key) \(name) \(outcome.id.uuidString.lowercased()) \(text)")
    }
  }
]
