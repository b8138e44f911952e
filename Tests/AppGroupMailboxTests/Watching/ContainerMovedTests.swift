import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A container renamed under a running watcher: moving an ancestor sends no inotify event to
/// the watches inside it, so the watcher checks its directories' place on a timer
/// (``WatcherCore/placeCheckInterval``). Found by an adversarial session: a `drain --follow`
/// went on following the moved copy while new messages went to a fresh mailbox at the old path.
@Suite struct ContainerMovedTests {
  /// Renames the container's directory to a sibling (the caller deletes it) and returns its path.
  private func moveAway(_ container: TemporaryContainer) throws -> String {
    let moved = container.url.path + ".moved"
    try #require(rename(container.url.path, moved) == 0)
    return moved
  }

  @Test func `A mailbox watcher finishes as removed when its container is renamed`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let watcher = AppGroupMailboxWatcher(
      target: PendingAreaTarget(directories: mailbox.spool.directories), pollingInterval: 1,
      diagnostic: nil, placeCheckInterval: 0.05)
    defer { watcher.close() }
    #expect(!watcher.isPolling)
    let moved = try moveAway(container)
    defer { try? FileManager.default.removeItem(atPath: moved) }
    // The deadline bounds a hang: the check runs every 50 ms.
    #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) {
      _ = try watcher.wait(timeout: 30)
    }
  }

  @Test func `A notification watcher follows its name to a new container at the same path`()
    throws
  {
    let container = try TemporaryContainer()
    let file = try NotificationFile(
      containerPath: container.url.path, name: "moved", permissions: .private)
    let watcher = AppGroupMailboxWatcher(
      target: try NotificationTarget(file: file), pollingInterval: 1, diagnostic: nil,
      placeCheckInterval: 0.05)
    defer { watcher.close() }
    #expect(try watcher.wait(timeout: 30))  // the first wake-up of every watcher
    let moved = try moveAway(container)
    defer { try? FileManager.default.removeItem(atPath: moved) }
    // Re-watched at the path (the directory made again), with a wake-up for what it missed.
    #expect(try watcher.wait(timeout: 30))
    #expect(FileManager.default.fileExists(atPath: file.directoryPath))
    NotificationPoster(file: file).post()
    #expect(try watcher.wait(timeout: 30))
  }

  @Test func `An event sequence ends as removed when its container is renamed`() async throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let events = try AppGroupMailboxEvents(
      directories: mailbox.spool.directories, lifetime: 86_400, bufferLimit: 16,
      placeCheckInterval: 0.05)
    let moved = try moveAway(container)
    defer { try? FileManager.default.removeItem(atPath: moved) }
    // Bounded: a timer closes the sequence if the check never ends it.
    let guardTimer = Task {
      try await Task.sleep(for: .seconds(30))
      events.close()
    }
    defer { guardTimer.cancel() }
    await #expect(throws: AppGroupMailboxError.mailboxDirectoryRemoved) {
      for try await _ in events {}
    }
  }

  @Test func `drain --follow exits 66 when its container is renamed`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let drain = try WatchSupport.startFollowingDrain(container)
    let moved = try moveAway(container)
    defer { try? FileManager.default.removeItem(atPath: moved) }
    // Within the place check's 10 s, with slack for a loaded machine.
    let finished = try drain.finish(deadline: 60)
    #expect(finished.status == 66)
    #expect(
      finished.stderr.hasSuffix(
        "the mailbox directory was deleted, moved or replaced while the command ran\n"))
  }
}
