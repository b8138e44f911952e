import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Points 5 and 6 of issue 3 and case C04 (poison): dead letters, and a quarantine that is
/// bounded, collision-free and never stops delivery.
@Suite struct PoisonAndQuarantineTests {
  @Test
  func
    `A message released maxDeliveryAttempts times becomes a dead letter and the next message is delivered`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxDeliveryAttempts: 3), clock: clock, diagnostics: recorder)
    let a = try mailbox.enqueue("A \(secretMarker)")
    try mailbox.enqueue("B")
    var counts: [Int] = []
    for _ in 0..<3 {
      let claim = try #require(try mailbox.claimPending(limit: 1).first)
      #expect(claim.message == "A \(secretMarker)")
      counts.append(claim.deliveryCount)
      try claim.release()
    }
    #expect(counts == [1, 2, 3])
    clock.advance(5)
    let next = try mailbox.claimPending(limit: 1)
    #expect(next.map(\.message) == ["B"])
    #expect(recorder.all == [.deadLetterQuarantined])
    let dead = try #require(container.quarantined().first)
    #expect(container.quarantined().count == 1)
    #expect(dead.reason == .deadletter)
    #expect(dead.id == a)
    #expect(dead.micros == micros(clock))
    // The dead letter keeps its bytes for inspection.
    let kept = try Data(
      contentsOf: URL(fileURLWithPath: container.path("quarantine", dead.fileName)))
    #expect(String(decoding: kept, as: UTF8.self).hasSuffix("\"A \(secretMarker)\""))
    #expect(try mailbox.claimPending().isEmpty)
    #expect(try depth(mailbox) == 1)
  }

  @Test
  func
    `Abandoned claims count as deliveries: the third recovery of a two-attempt message quarantines it`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(claimTimeout: 10, maxDeliveryAttempts: 2), clock: clock, diagnostics: recorder)
    let a = try mailbox.enqueue("A")
    #expect(try mailbox.claimPending().map(\.deliveryCount) == [1])
    clock.advance(11)
    #expect(try mailbox.claimPending().map(\.deliveryCount) == [2])
    clock.advance(11)
    #expect(try mailbox.claimPending().isEmpty)
    #expect(
      recorder.all == [.abandonedClaimRecovered, .abandonedClaimRecovered, .deadLetterQuarantined])
    #expect(container.quarantined().map(\.id) == [a])
    #expect(container.quarantineReasons() == ["deadletter"])
    #expect(try depth(mailbox) == 0)
  }

  @Test func `A name at the largest delivery count is a dead letter even without a limit`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    let id = UUID()
    try container.plant(
      "pending",
      pendingName(micros: micros(clock), sequence: 1, id: id, attempts: PendingName.maxAttempts),
      envelope(id: id, micros: micros(clock), text: "x"))
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.quarantined().map(\.id) == [id])
    #expect(recorder.all == [.deadLetterQuarantined])
  }

  @Test func `Quarantine keeps the newest maxQuarantinedFiles entries`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxQuarantinedFiles: 3), clock: clock, diagnostics: recorder)
    var ids: [UUID] = []
    for index in 0..<5 {
      let id = UUID()
      ids.append(id)
      try container.plant(
        "pending", pendingName(micros: micros(clock), sequence: UInt64(index + 1), id: id), [])
      #expect(try mailbox.claimPending().isEmpty)
      clock.advance(1)
    }
    #expect(container.quarantined().map(\.id) == Array(ids.suffix(3)))
    #expect(recorder.count(.malformedMessageQuarantined) == 5)
    #expect(recorder.count(.quarantinedFileDiscarded) == 2)
  }

  @Test func `A quarantine bound of 0 deletes instead of keeping`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxQuarantinedFiles: 0), clock: clock, diagnostics: recorder)
    try container.plant("pending", pendingName(micros: micros(clock), sequence: 1), [])
    try FileManager.default.createDirectory(
      atPath: container.path("pending", pendingName(micros: micros(clock), sequence: 2)) + "/x/y",
      withIntermediateDirectories: true)
    try mailbox.enqueue("ok")
    #expect(try mailbox.claimPending().map(\.message) == ["ok"])
    #expect(container.names("quarantine") == [])
    #expect(container.names("pending") == [])
    #expect(recorder.all == [.malformedMessageQuarantined, .unsafeFileQuarantined])
  }

  @Test func `Quarantine names never collide: a taken name is retried with a fresh one`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    let id = UUID()
    try container.plant("pending", pendingName(micros: micros(clock), sequence: 1, id: id), [])
    let (claims, unfired) = try FaultInjection.withRules([
      // The first renameat2 is the claim's (pending to claimed), the next three quarantine's.
      .init(call: "renameat2", errno: EEXIST, skip: 1, count: 3)
    ]) { try mailbox.claimPending() }
    #expect(claims.isEmpty)
    #expect(unfired.isEmpty)
    #expect(container.quarantined().map(\.id) == [id])
    #expect(recorder.all == [.malformedMessageQuarantined])
  }

  @Test(arguments: [ENOSPC, EDQUOT, EIO])
  func `A quarantine that cannot take the file deletes it and delivery goes on`(code: Int32) throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try container.plant("pending", pendingName(micros: micros(clock) - 1, sequence: 1), [])
    try mailbox.enqueue("after")
    let (claims, _) = try FaultInjection.withRules([
      // The first renameat2 is the claim's (pending to claimed), the second quarantine's.
      .init(call: "renameat2", errno: code, skip: 1, count: 1)
    ]) { try mailbox.claimPending() }
    #expect(claims.map(\.message) == ["after"])
    #expect(container.names("pending") == [])
    #expect(container.names("quarantine") == [])
    #expect(recorder.all == [.malformedMessageQuarantined, .quarantinedFileDiscarded])
  }

  @Test
  func
    `A hostile directory tree 100 levels deep is removed from quarantine without touching a link target`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxQuarantinedFiles: 1), clock: clock, diagnostics: recorder)
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    try Data("keep".utf8).write(to: outside.appendingPathComponent("target"))
    let top = container.path("pending", pendingName(micros: micros(clock), sequence: 1))
    var path = top
    for level in 0..<100 {
      path += "/d\(level)"
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
      try Data("f".utf8).write(to: URL(fileURLWithPath: path + "/file"))
      #expect(symlink(outside.path, path + "/link") == 0)
    }
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.quarantineReasons() == ["unsafe"])
    clock.advance(1)
    try container.plant("pending", pendingName(micros: micros(clock), sequence: 2), [])
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.quarantineReasons() == ["malformed"])
    #expect(
      try String(contentsOf: outside.appendingPathComponent("target"), encoding: .utf8) == "keep")
    #expect(
      recorder.all == [
        .unsafeFileQuarantined, .quarantinedFileDiscarded, .malformedMessageQuarantined,
      ])
  }

  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
  func `An oldest quarantined entry that cannot be deleted does not let quarantine grow`() throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxQuarantinedFiles: 2), clock: clock, diagnostics: recorder)
    var ids: [UUID] = []
    /// Plants a malformed message and claims, which quarantines it.
    func quarantineOne() throws {
      let id = UUID()
      ids.append(id)
      try container.plant(
        "pending", pendingName(micros: micros(clock), sequence: UInt64(ids.count), id: id), [])
      #expect(try mailbox.claimPending().isEmpty)
      clock.advance(1)
    }
    try quarantineOne()
    // The oldest entry is immutable (chattr(1)): not even root may delete it.
    let stuck = try container.path("quarantine", #require(container.quarantined().first).fileName)
    let locked = try Processes.run("/usr/bin/chattr", ["+i", stuck])
    try #require(locked.status == 0, "chattr +i failed: \(locked.stderr)")
    // Before the container (kept alive until then) removes its directory.
    defer {
      withExtendedLifetime(container) { _ = try? Processes.run("/usr/bin/chattr", ["-i", stuck]) }
    }
    for _ in 0..<4 { try quarantineOne() }
    #expect(container.quarantined().map(\.id) == [ids[0], ids[4]])
    #expect(recorder.count(.malformedMessageQuarantined) == 5)
    #expect(recorder.count(.quarantinedFileDiscarded) == 3)
    #expect(recorder.count(.unsafeEntryLeftInPlace) == 3)
  }
}
