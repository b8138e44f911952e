import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A `--exec` handler that cannot be started ends the drain, but the handlers already running
/// finish (within `--shutdown-timeout`), as after a stop signal: before, they were stopped at
/// once and their messages released, so work that had nothing to do with the failure was done
/// again (stop 33's named leftovers).
@Suite struct CLIExecStartFailureTests {
  /// A drain of two messages with `--jobs 2` whose first handler removes its program and
  /// waits for `go` (or 120 s), so the second start fails while it runs; returns once drain
  /// said so.
  private func startFailingDrain(_ container: TemporaryContainer) throws -> (
    StreamingProcess, exists: (String) -> Bool
  ) {
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("1".utf8))
    let directory = container.url.path
    let script = container.url.appendingPathComponent("handler.sh")
    try """
    #!/bin/sh
    rm -f "$0"
    touch '\(directory)/started'
    i=0
    while [ ! -e '\(directory)/go' ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i + 1)); done
    touch '\(directory)/finished'
    """.write(to: script, atomically: true, encoding: .utf8)
    #expect(chmod(script.path, 0o755) == 0)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments()
        + ["--follow", "--jobs", "2", "--shutdown-timeout", "300", "--exec", script.path])
    let exists = { (name: String) in FileManager.default.fileExists(atPath: directory + "/" + name)
    }
    #expect(waitUntil(deadline: 60) { exists("started") })
    try mailbox.enqueue(Data("2".utf8))
    #expect(waitUntil(deadline: 60) { drain.stderr.contains("a handler could not be started") })
    #expect(!exists("finished"))
    return (drain, exists)
  }

  @Test func `A handler that cannot start lets the running ones finish`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let (drain, exists) = try startFailingDrain(container)
    let script = container.url.appendingPathComponent("handler.sh")
    #expect(FileManager.default.createFile(atPath: container.url.path + "/go", contents: Data()))
    let result = try drain.finish(deadline: 120)
    #expect(result.status == 71, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "mailboxctl: drain: a handler could not be started (the error follows at exit); "
          + "claiming stopped, and the 1 handler running may finish within "
          + "--shutdown-timeout (300 s) before being stopped; a stop signal stops them now\n"))
    #expect(result.stderr.contains("--exec: cannot start \(script.path): "))
    #expect(exists("finished"))
    // The running handler's message was acknowledged; the other was put back as it was.
    let left = try mailbox.inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.state) == [.pending])
    #expect(left.map(\.deliveryCount) == [0])
  }

  /// The failed start counts as the first stop request: one signal then stops the running
  /// handlers at once, as a second would (the review of this change: a signal did nothing).
  @Test func `A stop signal after a failed start stops the running handlers at once`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let (drain, exists) = try startFailingDrain(container)
    drain.signal(SIGTERM)
    // Well before the handler's own 120 s and the 300 s of --shutdown-timeout.
    let result = try drain.finish(deadline: 60)
    #expect(result.status == 71, "\(result.stderr)")
    #expect(!exists("finished"))
    let left = try mailbox.inspector.entries(in: [.pending, .claimed, .delayed])
    #expect(left.map(\.state) == [.pending, .pending])
  }
}
