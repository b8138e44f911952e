import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 15, item 5: the checked reader hands the payload out from the buffer it read the file
/// into (``FileBytes``), without a copy; what a claim hands out is still exactly the bytes
/// enqueued, whatever the size, and a file that changes size between fstat(2) and the read is
/// read as it is then.
@Suite struct PayloadHandOffTests {
  private func rawMailbox(_ container: TemporaryContainer, maxPayloadBytes: Int = 65_536) throws
    -> AppGroupRawMailbox
  {
    try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs",
      limits: .init(maxPayloadBytes: maxPayloadBytes), overflowPolicy: .rejectNewest,
      diagnostic: nil, durability: .relaxed, permissions: .private, clock: FakeClock().mailboxClock)
  }

  /// A JSON payload of exactly `size` bytes (at least 1): a number for 1, else a string.
  private static func payload(size: Int) -> Data {
    size == 1 ? Data("7".utf8) : Data(("\"" + String(repeating: "x", count: size - 2) + "\"").utf8)
  }

  /// The header line's length for this mailbox's messages (all payloads share it).
  private func headerBytes(_ container: TemporaryContainer) throws -> Int {
    let mailbox = try rawMailbox(container)
    try mailbox.enqueue(Data("1".utf8))
    let name = try #require(container.names("pending").first)
    let size = try #require(
      try FileManager.default.attributesOfItem(
        atPath: container.area("pending").appendingPathComponent(name).path)[.size] as? Int)
    try #require(try mailbox.claimPending().first).acknowledge()
    return size - 1
  }

  @Test func `A claimed payload equals the enqueued bytes at every boundary size`() throws {
    let container = try TemporaryContainer()
    let header = try headerBytes(container)
    let maximum = 65_536
    // 1 byte; Data's inline sizes (14) and either side; the file at the header-only read's
    // 4 KiB and either side; the file at the payload limit.
    var sizes = [1, 2, 13, 14, 15, 16, 63, 64, 65, 255, 256, 257]
    sizes += [4095, 4096, 4097].map { $0 - header }
    sizes += [maximum - header - 1, maximum - header]
    let mailbox = try rawMailbox(container, maxPayloadBytes: maximum)
    for size in sizes {
      let payload = Self.payload(size: size)
      try mailbox.enqueue(payload)
      let claim = try #require(try mailbox.claimPending(limit: 1).first, "size \(size)")
      #expect(claim.payload == payload, "size \(size)")
      #expect(claim.payload.startIndex == 0 && claim.payload.count == size, "size \(size)")
      try claim.acknowledge()
    }
    #expect(throws: AppGroupMailboxError.self) {
      try mailbox.enqueue(Self.payload(size: maximum - header + 1))
    }
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `Changing a handed-out payload changes neither the claim nor another copy`() throws {
    let container = try TemporaryContainer()
    let mailbox = try rawMailbox(container)
    let payload = Self.payload(size: 10_000)
    try mailbox.enqueue(payload)
    let claim = try #require(try mailbox.claimPending().first)
    var changed = claim.payload
    changed[0] = UInt8(ascii: "[")
    changed.append(contentsOf: Array(repeating: UInt8(ascii: " "), count: 100_000))
    var alone = claim.payload
    alone.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
      raw[1] = UInt8(ascii: "y")
    }
    #expect(claim.payload == payload)
    #expect(changed.count == payload.count + 100_000 && changed.first == UInt8(ascii: "["))
    #expect(alone[1] == UInt8(ascii: "y") && alone.count == payload.count)
    try claim.acknowledge()
  }

  /// Runs one claim while a fault-injection action resizes the claimed file between its fstat(2)
  /// and its first pread(2).
  private func claimResized(
    _ container: TemporaryContainer, _ mailbox: AppGroupRawMailbox,
    resize: @escaping @Sendable (Int32) -> Void
  ) throws -> [AppGroupRawMailbox.Claim] {
    let claimedDirectory = container.area("claimed").path
    let action: @Sendable () -> Void = {
      for name in (try? FileManager.default.contentsOfDirectory(atPath: claimedDirectory)) ?? [] {
        let fd = open(claimedDirectory + "/" + name, O_RDWR)
        guard fd >= 0 else { continue }
        resize(fd)
        close(fd)
      }
    }
    let (claims, unfired) = try FaultInjection.withRules([
      .init(call: "pread", errno: 0, count: 1, action: action)
    ]) { try mailbox.claimPending() }
    #expect(unfired.isEmpty)
    return claims
  }

  @Test func `A file that grows after fstat is read whole, and its payload handed out as read`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try rawMailbox(container)
    let payload = Self.payload(size: 300)
    try mailbox.enqueue(payload)
    let spaces = [UInt8](repeating: UInt8(ascii: " "), count: 5_000)
    let claims = try claimResized(container, mailbox) { fd in
      _ = lseek(fd, 0, SEEK_END)
      _ = spaces.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
    #expect(claims.map(\.payload) == [payload + Data(spaces)])
    #expect(container.names("quarantine").isEmpty)
  }

  @Test func `A file that shrinks after fstat is read to its new end`() throws {
    let container = try TemporaryContainer()
    let mailbox = try rawMailbox(container)
    try mailbox.enqueue(Data("123456789".utf8))
    let claims = try claimResized(container, mailbox) { fd in
      var info = stat()
      guard fstat(fd, &info) == 0 else { return }
      _ = ftruncate(fd, info.st_size - 5)
    }
    #expect(claims.map(\.payload) == [Data("1234".utf8)])
  }

  @Test func `The capped read keeps the file's bytes exactly, for every size against fstat's`()
    throws
  {
    let container = try TemporaryContainer()
    let path = container.url.appendingPathComponent("bytes").path
    let fd = open(path, O_RDWR | O_CREAT, 0o600)
    try #require(fd >= 0)
    defer { close(fd) }
    var random = SeededGenerator(seed: 0x4259_5445)
    for size in [0, 1, 2, 15, 16, 17, 4095, 4096, 4097, 70_000] {
      let content = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      #expect(ftruncate(fd, 0) == 0)
      _ = content.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
      // fstat's size exact, smaller (the file grew since) and larger (it shrank since).
      for expected in [size, size / 2, 0, size + 1, size * 2 + 10] {
        let read = try Syscall.readCapped(fd, expected: expected, limit: 100_000)
        #expect(read.array == content, "size \(size), expected \(expected)")
        #expect(read.capacity <= 100_001)
        let whole = read.data(0..<read.count)
        #expect(whole == Data(content) && whole.startIndex == 0)
        if size >= 3 { #expect(read.data(1..<(size - 1)) == Data(content[1..<(size - 1)])) }
      }
      let cut = try Syscall.readCapped(fd, expected: size, limit: max(size - 1, 0))
      #expect(cut.array == Array(content.prefix(max(size - 1, 0) + 1)))
      let prefix = try Syscall.readPrefix(fd, count: min(size, Envelope.maxHeaderBytes))
      #expect(prefix.array == Array(content.prefix(Envelope.maxHeaderBytes)))
    }
  }
}
