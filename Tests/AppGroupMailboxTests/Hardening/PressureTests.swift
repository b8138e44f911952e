import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Point 10 of issue 3 and case C06: ENOSPC, EDQUOT, EIO and EMFILE while writing or moving give a
/// clear error, leave no partial or temporary file, and the mailbox works again afterwards.
@Suite struct PressureTests {
  /// A fault during an enqueue: the system call, the errno, how many calls of it pass first, and
  /// the role of the path the error names.
  struct Fault: Sendable, CustomTestStringConvertible {
    var call: String
    var errno: Int32
    var skip: Int
    var role: String
    var testDescription: String { "\(call) #\(skip + 1) fails with errno \(errno)" }
  }

  // After a first enqueue the sweeps are not due (fake clock), so an enqueue makes, in order:
  // openat(tmp file), fchmod, write, fsync(file), flock, pread(state), renameat2, pwrite(state),
  // flock, fsync(pending/).
  static let enqueueFaults: [Fault] = [
    Fault(call: "openat", errno: EMFILE, skip: 0, role: "tmp area"),
    Fault(call: "openat", errno: ENOSPC, skip: 0, role: "tmp area"),
    Fault(call: "write", errno: ENOSPC, skip: 0, role: ""),
    Fault(call: "write", errno: EDQUOT, skip: 0, role: ""),
    Fault(call: "write", errno: EIO, skip: 0, role: ""),
    Fault(call: "fsync", errno: EIO, skip: 0, role: ""),
    Fault(call: "fsync", errno: ENOSPC, skip: 0, role: ""),
    Fault(call: "renameat2", errno: ENOSPC, skip: 0, role: "tmp area and the pending area"),
    Fault(call: "renameat2", errno: EDQUOT, skip: 0, role: "tmp area and the pending area"),
    Fault(call: "renameat2", errno: EIO, skip: 0, role: "tmp area and the pending area"),
    Fault(call: "pwrite", errno: EIO, skip: 0, role: "state file"),
    Fault(call: "fsync", errno: EIO, skip: 1, role: "pending area"),
  ]

  @Test(arguments: enqueueFaults)
  func `A failing enqueue names its cause, leaves nothing behind, and the next one works`(
    fault: Fault
  ) throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("before")
    let pendingBefore = container.names("pending")
    let (thrown, unfired) = thrownError(under: [
      .init(call: fault.call, errno: fault.errno, skip: fault.skip)
    ]) {
      try mailbox.enqueue("lost \(secretMarker)")
    }
    #expect(unfired.isEmpty)
    let error = try #require(thrown as? AppGroupMailboxError)
    #expect(
      error.ioFailureCause
        == .init(
          operation: "enqueue", systemCall: fault.call, errno: fault.errno, role: fault.role))
    let place = fault.role.isEmpty ? "" : " on the \(fault.role)"
    #expect(error.localizedDescription.contains("enqueue: \(fault.call)\(place) failed"))
    #expect(!"\(error) \(error.localizedDescription)".contains(secretMarker))
    #expect(container.names("tmp") == [])
    #expect(container.names("pending") == pendingBefore)
    try container.expectDepth(1)
    try mailbox.enqueue("after")
    #expect(try mailbox.claimPending().map(\.message) == ["before", "after"])
    try container.expectDepth(2)
  }

  @Test(arguments: [EIO, EMFILE, ENOSPC])
  func `A claim whose move or open fails reports it and the message stays claimable`(code: Int32)
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    // The rename into claimed/ fails (EIO); or the claim's second openat (EMFILE, ENOSPC), an open
    // in pending/, does.
    let rule: FaultInjection.Rule =
      code == EIO
      ? .init(call: "renameat2", errno: code) : .init(call: "openat", errno: code, skip: 1)
    let role = code == EIO ? "pending area and the claimed area" : "pending area"
    let (thrown, unfired) = thrownError(under: [rule]) {
      _ = try mailbox.claimPending()
    }
    #expect(unfired.isEmpty)
    #expect(
      (thrown as? AppGroupMailboxError)?.ioFailureCause
        == .init(operation: "claim", systemCall: rule.call, errno: code, role: role))
    #expect(container.names("claimed") == [])
    #expect(container.names("pending").count == 1)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["A"])
    #expect(claims.map(\.deliveryCount) == [1])
  }

  @Test func `A failing release, renew or acknowledge reports its cause and can be retried`() throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(clock: clock)
    try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    let claims = try mailbox.claimPending()
    let attempts: [(String, Int32, String, String, () throws -> Void)] = [
      (
        "release", ENOSPC, "renameat2", "claimed area and the pending area",
        { try claims[0].release() }
      ),
      ("renew", EIO, "renameat2", "claimed area", { try claims[1].renew() }),
      ("acknowledge", EIO, "unlinkat", "claimed area", { try claims[1].acknowledge() }),
    ]
    for (operation, code, call, role, body) in attempts {
      let (thrown, _) = thrownError(under: [.init(call: call, errno: code)]) {
        try body()
      }
      #expect(
        (thrown as? AppGroupMailboxError)?.ioFailureCause
          == .init(operation: operation, systemCall: call, errno: code, role: role))
      try body()
    }
    #expect(try mailbox.claimPending().map(\.message) == ["A"])
    #expect(container.names("tmp") == [])
  }

  @Test(mountsTmpfs)
  func `On a full 1 MiB tmpfs a 2 MiB enqueue fails cleanly and a 10 KiB one succeeds (C06)`()
    throws
  {
    let container = try TemporaryContainer()
    let mount = container.url.appendingPathComponent("small").path
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    try mountTmpfs(mount, size: "1m")
    defer { unmount(mount) }
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: mount), namespace: "jobs",
      limits: .init(maxPayloadBytes: 4 * 1_048_576))
    let spool = URL(fileURLWithPath: mount + "/AppGroupMailbox/jobs")
    func names(_ area: String) throws -> [String] {
      try FileManager.default.contentsOfDirectory(atPath: spool.appendingPathComponent(area).path)
    }
    let failure = #expect(throws: AppGroupMailboxError.self) {
      try mailbox.enqueue(String(repeating: "x", count: 2 * 1_048_576))
    }
    #expect(
      failure?.ioFailureCause == .init(operation: "enqueue", systemCall: "write", errno: ENOSPC))
    #expect(try names("tmp") == [])
    #expect(try names("pending") == [])
    // The failed file is unlinked and closed, but a child another test forks at that moment holds
    // a copy of its descriptor until its exec closes it (O_CLOEXEC), and tmpfs frees the pages
    // only then: wait for the space to come back (a hang bound, not a speed one).
    #expect(
      waitUntil(deadline: 60) {
        var info = statvfs()
        return statvfs(mount, &info) == 0 && Int(info.f_bavail) * Int(info.f_frsize) >= 512 * 1024
      })
    #expect(try depth(mailbox) == 0)
    let small = String(repeating: "y", count: 10 * 1024)
    try mailbox.enqueue(small)
    #expect(try depth(mailbox) == 1)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == [small])
    try claims.first?.acknowledge()
    #expect(try names("claimed") == [])
  }

  @Test
  func
    `Stale temporary files are swept, young ones stay, and neither is counted or delivered (C06)`()
    throws
  {
    let container = try TemporaryContainer()
    let recorder = DiagnosticRecorder()
    // Create the namespace, then plant: 50 leftovers an hour old, 3 young ones of a live writer.
    _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    let hourAgo = Date().addingTimeInterval(-3_600).timeIntervalSince1970
    for index in 0..<50 {
      let name = "999-\(index).tmp"
      try container.plant("tmp", name, Array("partial".utf8))
      var times = [
        timespec(tv_sec: Int(hourAgo), tv_nsec: 0), timespec(tv_sec: Int(hourAgo), tv_nsec: 0),
      ]
      #expect(utimensat(AT_FDCWD, container.path("tmp", name), &times, 0) == 0)
    }
    for index in 0..<3 { try container.plant("tmp", "live-\(index).tmp", Array("writing".utf8)) }
    let mailbox: AppGroupMailbox<String> = try container.mailbox(diagnostics: recorder)
    #expect(try mailbox.claimPending().isEmpty)
    #expect(recorder.count(.staleTemporaryFileRemoved) == 50)
    #expect(container.names("tmp") == ["live-0.tmp", "live-1.tmp", "live-2.tmp"])
    #expect(try depth(mailbox) == 0)
    try mailbox.performMaintenance()
    #expect(container.names("tmp").count == 3)
    #expect(recorder.count(.staleTemporaryFileRemoved) == 50)
  }
}
