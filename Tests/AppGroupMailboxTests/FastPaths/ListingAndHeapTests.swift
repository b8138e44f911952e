import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The pieces a first claim at depth rests on: the getdents64 listing (large reads, names parsed
/// from its buffer), the name parser over bytes, and the chunked heap of the claim index.
struct ListingAndHeapTests {
  /// A name in claim order's reference: sorted by key, then by `uuidString`.
  private static func referenceOrder(_ names: [PendingName]) -> [PendingName] {
    names.sorted {
      $0.key != $1.key ? $0.key < $1.key : $0.id.uuidString < $1.id.uuidString
    }
  }

  /// 5,000 names over three chunks: levels, equal times, equal keys with different ids.
  private static func names() -> [PendingName] {
    var generator = SystemRandomNumberGenerator()
    return (0..<5_000).map { index in
      PendingName(
        key: MessageKey(
          micros: Int64.random(in: 0..<50, using: &generator),
          sequence: UInt64.random(in: 0..<20, using: &generator),
          level: [1, 5, 5, 5, 9][index % 5]),
        id: UUID(), attempts: index % 3 == 0 ? Int(Int32.max) : index)
    }
  }

  @Test func `A heap built in place pops names in claim order, then by id`() {
    let names = Self.names()
    var heap = NameHeap(names)
    #expect(heap.count == names.count)
    var popped: [PendingName] = []
    while let name = heap.pop() { popped.append(name) }
    #expect(popped == Self.referenceOrder(names))
    #expect(heap.count == 0)
  }

  @Test func `A heap fed one name at a time between pops keeps claim order`() {
    let names = Self.names()
    var heap = NameHeap()
    var popped: [PendingName] = []
    for (index, name) in names.enumerated() {
      heap.push(name)
      if index % 3 == 2, let first = heap.pop() { popped.append(first) }
    }
    while let name = heap.pop() { popped.append(name) }
    #expect(Set(popped) == Set(names))
    #expect(popped.count == names.count)
    // Everything popped after the last push comes out in order.
    let tail = Array(popped.suffix(names.count - names.count / 3))
    #expect(tail == Self.referenceOrder(tail))
  }

  @Test func `A listing larger than its first read reports every entry once and no dot entries`()
    throws
  {
    let container = try TemporaryContainer()
    let fd = open(container.url.path, O_RDONLY | O_DIRECTORY)
    try #require(fd >= 0)
    defer { close(fd) }
    // 3,000 message names are about 300 KiB of getdents64 records: several reads.
    var expected: Set<PendingName> = []
    for sequence in 1...3_000 {
      let name = PendingName(
        key: MessageKey(micros: 7, sequence: UInt64(sequence)), id: UUID(), attempts: 0)
      try Data().write(to: container.url.appendingPathComponent(name.fileName))
      expected.insert(name)
    }
    try Data().write(to: container.url.appendingPathComponent("planted"))
    var listed: [PendingName] = []
    let foreign = try PendingIndex.listing(fd) { listed.append($0) }
    #expect(foreign.map(\.name) == ["planted"])
    #expect(foreign.map(\.type) == [UInt8(DT_REG)])
    #expect(listed.count == 3_000)
    #expect(Set(listed) == expected)
    #expect(try Syscall.list(fd).count == 3_001)
  }

  @Test func `A name that is not UTF-8 is listed with its exact bytes`() throws {
    let container = try TemporaryContainer()
    let fd = open(container.url.path, O_RDONLY | O_DIRECTORY)
    try #require(fd >= 0)
    defer { close(fd) }
    let bytes: [CChar] = [0x61, CChar(bitPattern: 0xff), 0x62, 0]
    let file = openat(fd, bytes, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
    try #require(file >= 0)
    close(file)
    let entries = try Syscall.list(fd)
    #expect(entries.count == 1)
    #expect(entries.first?.name == "a\u{FFFD}b")
    guard case .bytes(let exact) = entries.first?.exactName else {
      Issue.record("expected the exact bytes")
      return
    }
    #expect(exact == bytes)
  }

  @Test func `The byte parser agrees with the text parser`() {
    let id = UUID()
    let valid = PendingName(key: MessageKey(micros: 12, sequence: 3), id: id, attempts: 4)
    let leveled = PendingName(
      key: MessageKey(micros: 12, sequence: 3, level: 9), id: id, attempts: 0)
    let lower = id.uuidString.lowercased()
    let candidates = [
      valid.fileName, leveled.fileName, valid.fileName.uppercased(),
      "p5-" + valid.fileName, "0000000000000012-00000000000000000003-\(lower)-04.msg",
      "0000000000000012-00000000000000000003-\(lower)-4.ms", "x.msg", ".msg", "",
      "0000000000000012-00000000000000000003-\(lower)-2147483648.msg",
    ]
    for text in candidates {
      let viaBytes = Array(text.utf8).withUnsafeBufferPointer { PendingName(bytes: $0) }
      #expect(viaBytes == PendingName(parsing: text), "\(text)")
    }
    #expect(PendingName(parsing: valid.fileName) == valid)
    #expect(PendingName(parsing: leveled.fileName) == leveled)
    #expect(PendingName(parsing: "p5-" + valid.fileName) == nil)
    #expect(PendingName(parsing: valid.fileName.uppercased()) == nil)
  }
}

/// The counters' recount lists `pending/` with the same listing and counts each message once
/// across the areas, in 40 bytes a name (a sorted heap, no hash set).
struct RecountTests {
  @Test func `A recount counts pending, claimed and delayed messages once each`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 10_000), clock: clock)
    // 1,500 names are about 156 KiB of getdents64 records: several reads.
    for index in 0..<1_500 { try mailbox.enqueue("m\(index)") }
    _ = try mailbox.enqueue("later", delay: 3600)
    let claimed = try #require(try mailbox.claimPending(limit: 1).first)
    // A second copy of a pending message in claimed/ (same key and id) is one message.
    let pending = try #require(container.pendingNames().first)
    let copy = ClaimedName(
      message: PendingName(key: pending.key, id: pending.id, attempts: 1), token: 7,
      leaseUntilMicros: 1)
    try Data().write(to: container.area("claimed").appendingPathComponent(copy.fileName))
    // A foreign entry and a directory under a message name are not messages.
    try Data().write(to: container.area("pending").appendingPathComponent("planted"))
    let fake = PendingName(key: MessageKey(micros: 1, sequence: 99_999), id: UUID(), attempts: 0)
    try FileManager.default.createDirectory(
      at: container.area("pending").appendingPathComponent(fake.fileName),
      withIntermediateDirectories: false)
    let counted = try mailbox.spool.recount(stored: nil)
    #expect(counted.depth == 1_501)
    #expect(counted.sequence == 1_501)
    try claimed.acknowledge()
    #expect(try mailbox.spool.recount(stored: nil).depth == 1_500)
  }
}
