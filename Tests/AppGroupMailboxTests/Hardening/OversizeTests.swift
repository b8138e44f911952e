import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Point 2 of issue 3 and case C08: the payload bound on both sides, and files too large to read.
@Suite struct OversizeTests {
  @Test func `An oversized enqueue fails with the exact sizes before anything is written (C08)`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxPayloadBytes: 1_048_576), clock: clock)
    let text = secretMarker + String(repeating: "x", count: 2 * 1_048_576)
    let expected = try Envelope.encode(
      id: UUID(), enqueuedAt: micros(clock), messageType: stringType,
      payload: JSONEncoder().encode(text)
    ).count
    let (thrown, unfired) = thrownError(under: [
      .init(call: "write", errno: 0, count: Int.max)
    ]) {
      try mailbox.enqueue(text)
    }
    let error = try #require(thrown as? AppGroupMailboxError)
    #expect(error == .payloadTooLarge(actualBytes: expected, maximumBytes: 1_048_576))
    #expect(!"\(error) \(error.localizedDescription)".contains(secretMarker))
    // Not a byte was written: the rule watching write(2) never fired.
    #expect(unfired.map(\.call) == ["write"])
    #expect(unfired.map(\.count) == [Int.max])
    #expect(container.names("tmp") == [])
    #expect(container.names("pending") == [])
    #expect(try depth(mailbox) == 0)
  }

  @Test func `A 512 MiB sparse file is quarantined on its size without being read (C08)`() throws {
    let container = try TemporaryContainer()
    let producer = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    let id = UUID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let name = pendingName(micros: now - 1_000_000, sequence: 0, id: id)
    let fd = open(container.path("pending", name), O_WRONLY | O_CREAT | O_EXCL, 0o600)
    try #require(fd >= 0)
    let header = envelope(id: id, micros: now, text: secretMarker)
    #expect(header.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == header.count)
    #expect(ftruncate(fd, 512 * 1_048_576) == 0)
    close(fd)
    try producer.enqueue("normal")

    let result = try Processes.runWorker(["claim-rss", container.url.path, "jobs", "1048576"])
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.lines
    #expect(lines.filter { $0.hasPrefix("message ") } == ["message normal"])
    let before = try #require(
      lines.first { $0.hasPrefix("rss-before ") }.flatMap { Int($0.dropFirst(11)) })
    let after = try #require(
      lines.first { $0.hasPrefix("rss-after ") }.flatMap { Int($0.dropFirst(10)) })
    // Peak resident memory grows by far less than the 512 MiB file (generous slack: 64 MiB).
    #expect(after - before < 64 * 1024, "peak RSS grew by \(after - before) KiB")
    #expect(container.quarantined().map(\.id) == [id])
    #expect(container.quarantineReasons() == ["oversized"])
    #expect(!result.stdout.contains(secretMarker) && !result.stderr.contains(secretMarker))
  }

  @Test
  func
    `A file that grows while it is read is cut at the limit plus one byte and quarantined (C08)`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxPayloadBytes: 4096), clock: clock, diagnostics: recorder)
    let grower = try mailbox.enqueue("grows")
    try mailbox.enqueue("stays")
    let claimedDirectory = container.area("claimed").path
    // Between the size check and the read, another writer makes the claimed file 512 MiB long.
    let grow: @Sendable () -> Void = {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: claimedDirectory)) ?? []
      for name in names where name.contains(grower.uuidString.lowercased()) {
        let fd = open(claimedDirectory + "/" + name, O_WRONLY)
        _ = ftruncate(fd, 512 * 1_048_576)
        close(fd)
      }
    }
    let (claims, unfired) = try FaultInjection.withRules([
      .init(call: "pread", errno: 0, count: 1, action: grow)
    ]) { try mailbox.claimPending() }
    #expect(unfired.isEmpty)
    #expect(claims.map(\.message) == ["stays"])
    #expect(container.quarantined().map(\.id) == [grower])
    #expect(container.quarantineReasons() == ["oversized"])
    #expect(recorder.all == [.malformedMessageQuarantined])
  }

  @Test func `A capped read returns at most the limit plus one byte, whatever the file's size`()
    throws
  {
    let container = try TemporaryContainer()
    let path = container.url.appendingPathComponent("sparse").path
    let fd = open(path, O_RDWR | O_CREAT, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    #expect(ftruncate(fd, 512 * 1_048_576) == 0)
    #expect(try Syscall.readCapped(fd, expected: 10, limit: 1_048_576).count == 1_048_577)
    #expect(try Syscall.readCapped(fd, expected: 512 * 1_048_576, limit: 100).count == 101)
    #expect(ftruncate(fd, 10) == 0)
    #expect(try Syscall.readCapped(fd, expected: 10, limit: 100).count == 10)
    #expect(try Syscall.readCapped(fd, expected: 0, limit: 100).count == 10)
    #expect(try Syscall.readCapped(fd, expected: 10, limit: 10).count == 10)
    #expect(try Syscall.readCapped(fd, expected: 10, limit: 9).count == 10)
  }
}
