import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A claim skips the listing of `delayed/` while nothing there can be due (``DelayedScan``), and
/// never misses what another process added meanwhile.
@Suite struct DelayedScanTests {
  /// How many times `body` listed `delayed/` (an open of `.` in it).
  static func delayedListings(_ spool: Spool, _ body: () throws -> Void) throws -> Int {
    let recorder = SystemCallRecording.Recorder()
    try SystemCallRecording.recording(recorder, body)
    return recorder.all.filter {
      $0.name == "openat" && $0.descriptor == spool.directories.delayed && $0.path == "."
    }.count
  }

  /// Waits until the times of `delayed/` are old enough to be trusted (a tenth of a second of
  /// real time after its last change; ctime cannot be set back).
  static func settle(_ spool: Spool) throws {
    let settled = waitUntil(deadline: 60) {
      (try? DelayedScan.Stamp(Syscall.fstat(spool.directories.delayed)).isSettled) ?? false
    }
    try #require(settled, "delayed/ never settled")
  }

  @Test func `A claim lists delayed only when it changed, an entry fell due, or a second passed`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("later", delay: 30)
    try Self.settle(mailbox.spool)
    #expect(try Self.delayedListings(mailbox.spool) { _ = try mailbox.claimPending() } == 1)
    // Unchanged, nothing due, within a second: skipped.
    #expect(try Self.delayedListings(mailbox.spool) { _ = try mailbox.claimPending() } == 0)
    clock.advance(0.5)
    #expect(try Self.delayedListings(mailbox.spool) { _ = try mailbox.claimPending() } == 0)
    // A second of the mailbox clock since the last listing: listed again.
    clock.advance(0.6)
    #expect(try Self.delayedListings(mailbox.spool) { _ = try mailbox.claimPending() } == 1)
    #expect(try Self.delayedListings(mailbox.spool) { _ = try mailbox.claimPending() } == 0)
    // The entry falls due: listed and promoted (the recovery sweep, due after a second too, may
    // list first; the promotion changed the directory, so the claim lists once more).
    clock.advance(29)
    var claimed: [String] = []
    #expect(
      try Self.delayedListings(mailbox.spool) {
        claimed = try mailbox.claimPending().map(\.message)
      } >= 1)
    #expect(claimed == ["later"])
  }

  @Test func `A delayed message another instance adds is promoted when due, however settled`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let consumer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    let producer: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try Self.settle(consumer.spool)
    #expect(try consumer.claimPending().isEmpty)
    #expect(try Self.delayedListings(consumer.spool) { _ = try consumer.claimPending() } == 0)
    // Added by another instance: the consumer knows nothing of it but the directory's times.
    try producer.enqueue("soon", delay: 0.2)
    clock.advance(0.3)
    #expect(try consumer.claimPending().map(\.message) == ["soon"])
  }
}
