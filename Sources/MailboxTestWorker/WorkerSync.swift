import AppGroupMailbox
import Foundation
import Glibc

// What the racing worker commands share: starting together and opening their mailbox.

/// Waits until `path` exists; fails after `seconds` (the other process never came).
func awaitFile(_ path: String, seconds: TimeInterval = 120) throws {
  let limit = Date().addingTimeInterval(seconds)
  while !FileManager.default.fileExists(atPath: path) {
    guard Date() < limit else { throw WorkerTimeout(what: path) }
    sched_yield()
  }
}

/// Creates `ready` (the test counts the workers that are ready), then waits for `go` (the test
/// creates it once all are), so that every worker starts at the same moment.
func startTogether(ready: String, go: String) throws {
  guard FileManager.default.createFile(atPath: ready, contents: nil) else {
    throw WorkerTimeout(what: "create \(ready)")
  }
  try awaitFile(go)
}

/// The raw mailbox of namespace `args[1]` in the container `args[0]`, bounded to `maxMessages`.
func rawMailbox(_ args: [String], maxMessages: Int) throws -> AppGroupRawMailbox {
  try AppGroupRawMailbox(
    containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
    limits: AppGroupMailboxLimits(maxMessages: maxMessages))
}

/// A file the worker waited for never appeared, or one it must create could not be.
struct WorkerTimeout: Error {
  var what: String
}
