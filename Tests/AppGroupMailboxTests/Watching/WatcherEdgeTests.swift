import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Watcher edges an application developer met (from an adversarial session on the Swift API).
@Suite struct WatcherEdgeTests {
  @Test func `A task cancelled before it waits takes no wake-up and leaves no mark`() async throws {
    let container = try TemporaryContainer()
    let watcher = try AppGroupMailboxWatcher(notificationName: "edge", containerURL: container.url)
    // The first wake-up is waiting from the start.
    for _ in 0..<20 {
      let outcome = await Task { () -> WaitOutcome in
        withUnsafeCurrentTask { $0?.cancel() }
        return await watcher.core.wait(timeout: nil)
      }.value
      #expect(outcome == .cancelled)
    }
    #expect(watcher.core.waiterMarks == 0)
    #expect(await watcher.core.wait(timeout: 60) == .woke)
    #expect(watcher.core.waiterMarks == 0)
  }

  @Test func `A watcher that makes its container gives it the mailbox's mode, not the umask's`()
    throws
  {
    let container = try TemporaryContainer()
    for (permissions, mode) in [
      (AppGroupMailboxPermissions.private, 0o700), (.groupShared, 0o2770),
    ] {
      let made = container.url.appendingPathComponent("made-\(mode)/inner")
      _ = try AppGroupMailboxWatcher(
        notificationName: "edge", containerURL: made, permissions: permissions)
      for path in [made.path, made.deletingLastPathComponent().path] {
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(Int(info.st_mode) & 0o7777 == mode, "\(path)")
      }
    }
  }
}
