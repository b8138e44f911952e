import Foundation
import Glibc
import MailboxLocks
import Synchronization
import Testing

@testable import AppGroupMailbox

/// A message type whose decoder refuses the text "poison" (a `Message` whose `init(from:)` throws).
struct Note: Codable, Sendable, Equatable {
  var text: String

  init(text: String) { self.text = text }

  init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    text = try container.decode(String.self, forKey: .text)
    if text == "poison" {
      throw DecodingError.dataCorruptedError(
        forKey: .text, in: container, debugDescription: "refused")
    }
  }
}

let noteType = String(reflecting: Note.self)

/// Point 3 and 4 of issue 3 and case C07: entries under message names that are not messages.
@Suite struct HostileEntryTests {
  /// Plants `name` in pending/ as the kind of entry `kind` says; returns the reason it must be
  /// quarantined with, or nil when the kind cannot be made here (a device node without root).
  static func plantHostile(
    _ kind: String, in container: TemporaryContainer, name: String, id: UUID, micros: Int64,
    outside: URL
  ) throws -> String? {
    let path = container.path("pending", name)
    func valid(_ text: String, type: String = noteType, format: Int = 1, forID: UUID? = nil)
      -> [UInt8]
    {
      var header = Array(
        try! Envelope.encode(
          id: forID ?? id, enqueuedAt: micros, messageType: type, payload: Data()))
      if format != 1 {
        header = Array(
          String(decoding: header, as: UTF8.self).replacingOccurrences(
            of: "\"format\":1", with: "\"format\":\(format)"
          ).utf8)
      }
      return header + Array(try! JSONEncoder().encode(Note(text: text)))
    }
    switch kind {
    case "directory":
      try FileManager.default.createDirectory(
        atPath: path + "/inner", withIntermediateDirectories: true)
      try Data("\(secretMarker) inside a directory".utf8).write(
        to: URL(fileURLWithPath: path + "/inner/file"))
      return "unsafe"
    case "fifo":
      guard mkfifo(path, 0o600) == 0 else { throw PlantError(what: "mkfifo", errno: errno) }
      return "unsafe"
    case "socket":
      let short = "/tmp/agm-\(UInt32.random(in: .min ... .max)).sock"
      let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
      defer { close(fd) }
      var address = sockaddr_un()
      address.sun_family = sa_family_t(AF_UNIX)
      withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in short.utf8.enumerated() { raw[index] = byte }
      }
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
      }
      guard bound == 0, rename(short, path) == 0 else {
        throw PlantError(what: "socket", errno: errno)
      }
      return "unsafe"
    case "device":
      guard isRoot else {
        #expect(!isCI, "CI must run this test as root (it makes a device node)")
        print("HostileEntryTests: no device node planted: mknod(2) needs root")
        return nil
      }
      guard mknod(path, S_IFCHR | 0o600, dev_t((1 << 8) | 3)) == 0 else {
        throw PlantError(what: "mknod", errno: errno)
      }
      return "unsafe"
    case "dangling symlink":
      guard symlink(outside.path + "/does-not-exist", path) == 0 else {
        throw PlantError(what: "symlink", errno: errno)
      }
      return "unsafe"
    case "symlink to a sensitive file":
      guard symlink(outside.appendingPathComponent("secret.txt").path, path) == 0 else {
        throw PlantError(what: "symlink", errno: errno)
      }
      return "unsafe"
    case "symlink to a valid message":
      guard symlink(outside.appendingPathComponent("valid.msg").path, path) == 0 else {
        throw PlantError(what: "symlink", errno: errno)
      }
      return "unsafe"
    case "hard link":
      let source = outside.appendingPathComponent("linked-\(id).msg").path
      try Data(valid("linked")).write(to: URL(fileURLWithPath: source))
      guard link(source, path) == 0 else { throw PlantError(what: "link", errno: errno) }
      return "unsafe"
    case "zero-length":
      try container.plant("pending", name, [])
      return "malformed"
    case "NUL bytes":
      try container.plant("pending", name, [UInt8](repeating: 0, count: 4096))
      return "malformed"
    case "truncated JSON":
      let bytes = valid("\(secretMarker) truncated")
      try container.plant("pending", name, Array(bytes.prefix(bytes.count - 5)))
      return "malformed"
    case "not JSON":
      try container.plant("pending", name, Array("\(secretMarker) plain text\n".utf8))
      return "malformed"
    case "invalid UTF-8":
      let header = Array(
        try! Envelope.encode(id: id, enqueuedAt: micros, messageType: noteType, payload: Data()))
      try container.plant(
        "pending", name,
        header + Array("{\"text\":\"\(secretMarker)".utf8) + [0xFF, 0xFE, 0x22, 0x7D])
      return "malformed"
    case "future format":
      try container.plant("pending", name, valid("\(secretMarker) from the future", format: 2))
      return "future"
    case "throwing init(from:)":
      try container.plant("pending", name, valid("poison"))
      return "malformed"
    case "id not matching the name":
      try container.plant("pending", name, valid("\(secretMarker) copied", forID: UUID()))
      return "malformed"
    case "oversized":
      try container.plant(
        "pending", name, valid(secretMarker + String(repeating: "x", count: 5000)))
      return "oversized"
    default:
      Issue.record("unknown kind \(kind)")
      return nil
    }
  }

  static let kinds = [
    "directory", "fifo", "socket", "device", "dangling symlink", "symlink to a sensitive file",
    "symlink to a valid message", "hard link", "zero-length", "NUL bytes", "truncated JSON",
    "not JSON", "invalid UTF-8", "future format", "throwing init(from:)",
    "id not matching the name", "oversized",
  ]

  @Test
  func
    `Every hostile entry in front of three valid messages: exactly the three are delivered in order and targets are untouched`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date())
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<Note> = try container.mailbox(
      Note.self, limits: .init(maxPayloadBytes: 4096, maxQuarantinedFiles: 100), clock: clock,
      diagnostics: recorder)
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    let secret = Data("\(secretMarker) password=hunter2\n".utf8)
    try secret.write(to: outside.appendingPathComponent("secret.txt"))
    let elsewhere = envelope(id: UUID(), micros: micros(clock), text: "elsewhere", type: noteType)
    try Data(elsewhere).write(to: outside.appendingPathComponent("valid.msg"))

    let front = micros(clock) - 60_000_000
    var expected: [String] = []
    for (index, kind) in Self.kinds.enumerated() {
      let id = UUID()
      let name = pendingName(micros: front, sequence: UInt64(index + 1), id: id)
      if let reason = try Self.plantHostile(
        kind, in: container, name: name, id: id, micros: front, outside: outside)
      {
        expected.append(reason)
      }
    }
    // Two entries under names that are not message names (one not even UTF-8).
    try container.plant("pending", "notes.txt", Array("\(secretMarker)".utf8))
    let rawPath =
      Array(container.area("pending").path.utf8CString.dropLast())
      + [47, 102, 0xFF - 256, 46, 0]
      .map { CChar(truncatingIfNeeded: $0) }
    let rawFD = rawPath.withUnsafeBufferPointer {
      open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    }
    try #require(rawFD >= 0)
    close(rawFD)
    expected += ["foreign", "foreign"]

    for text in ["A", "B", "C"] {
      clock.advance(1)
      try mailbox.enqueue(Note(text: text))
    }
    let watch = try AccessWatch([
      outside.appendingPathComponent("secret.txt").path,
      outside.appendingPathComponent("valid.msg").path,
    ])

    let result = Locked<[String]?>(nil)
    let returned = finishes(within: 2) {
      let claims = try? mailbox.claimPending(limit: 3)
      result.withLock { $0 = claims?.map(\.message.text) }
    }
    #expect(returned, "a claim blocked")
    #expect(result.withLock { $0 } == ["A", "B", "C"])
    #expect(container.quarantineReasons() == expected.sorted())
    #expect(container.names("quarantine").count == expected.count)
    #expect(container.names("pending") == [])
    #expect(container.names("claimed").count == 3)
    #expect(try depth(mailbox) == 3)
    #expect(try recountedDepth(mailbox) == 3)
    let unsafe = expected.filter { $0 == "unsafe" || $0 == "foreign" }.count
    #expect(recorder.count(.unsafeFileQuarantined) == unsafe)
    #expect(recorder.count(.malformedMessageQuarantined) == expected.count - unsafe)
    #expect(recorder.all.count == expected.count)
    // Targets: never read, moved or deleted.
    #expect(watch.events() == [])
    #expect(try Data(contentsOf: outside.appendingPathComponent("secret.txt")) == secret)
    #expect(try Array(Data(contentsOf: outside.appendingPathComponent("valid.msg"))) == elsewhere)
    let linked = try FileManager.default.contentsOfDirectory(atPath: outside.path).filter {
      $0.hasPrefix("linked-")
    }
    #expect(linked.count == 1)
    // Nothing more to claim; the contained entries are never retried.
    #expect(try mailbox.claimPending().isEmpty)
    #expect(recorder.all.count == expected.count)
  }

  @Test
  func
    `A hard-linked message is skipped while young and delivered once its mover unlinks the source`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date())
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    let id = UUID()
    let source = container.url.appendingPathComponent("mover-source").path
    try Data(envelope(id: id, micros: micros(clock), text: "moved")).write(
      to: URL(fileURLWithPath: source))
    let name = pendingName(micros: micros(clock), sequence: 1, id: id)
    #expect(link(source, container.path("pending", name)) == 0)
    clock.advance(0.5)
    try mailbox.enqueue("after")

    let first = try mailbox.claimPending()
    #expect(first.map(\.message) == ["after"])
    #expect(container.names("pending") == [name])
    #expect(container.names("quarantine") == [])
    #expect(recorder.all == [])

    #expect(unlink(source) == 0)  // the mover finishes: one link left
    let second = try mailbox.claimPending()
    #expect(second.map(\.message) == ["moved"])
    #expect(second.map(\.id) == [id])
    #expect(container.names("quarantine") == [])
  }

  @Test
  func
    `A hard link that persists past the grace period is quarantined and its other name is untouched`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date())
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    let id = UUID()
    let source = container.url.appendingPathComponent("foreign-file").path
    let content = Data(envelope(id: id, micros: micros(clock), text: "\(secretMarker)"))
    try content.write(to: URL(fileURLWithPath: source))
    let name = pendingName(micros: micros(clock), sequence: 1, id: id)
    #expect(link(source, container.path("pending", name)) == 0)

    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.names("pending") == [name])
    clock.advance(2)
    #expect(try mailbox.claimPending().isEmpty)
    #expect(container.names("pending") == [])
    #expect(container.quarantined().map(\.reason) == [.unsafe])
    #expect(container.quarantined().map(\.id) == [id])
    #expect(recorder.all == [.unsafeFileQuarantined])
    #expect(try Data(contentsOf: URL(fileURLWithPath: source)) == content)
    #expect(try depth(mailbox) == 0)
  }

  @Test
  func
    `Entries under foreign names in pending are quarantined at once so a drain leaves pending empty`()
    throws
  {
    let container = try TemporaryContainer()
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(diagnostics: recorder)
    try container.plant("pending", "notes.txt", Array("x".utf8))
    try container.plant("pending", ".partial.msg.swp", [])
    try FileManager.default.createDirectory(
      atPath: container.path("pending", "subdir") + "/deeper", withIntermediateDirectories: true)
    #expect(symlink("/etc/passwd", container.path("pending", "passwd")) == 0)
    try mailbox.enqueue("real")

    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["real"])
    #expect(container.names("pending") == [])
    #expect(container.quarantineReasons() == ["foreign", "foreign", "foreign", "foreign"])
    #expect(container.quarantined().allSatisfy { $0.id == nil })
    #expect(recorder.count(.unsafeFileQuarantined) == 4)
  }

  @Test
  func
    `Swapping real messages for symlinks while consumers claim never blocks and never follows a link`()
    throws
  {
    let container = try TemporaryContainer()
    let producer: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxMessages: 1_000, maxQuarantinedFiles: 1_000))
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    let secretPath = outside.appendingPathComponent("secret.txt").path
    let secret = Data("\(secretMarker)\n".utf8)
    try secret.write(to: URL(fileURLWithPath: secretPath))
    let watch = try AccessWatch([secretPath])
    let stop = Atomic<Bool>(false)
    let delivered = Locked<[Int]>([])
    let slowest = Locked<Double>(0)
    let failures = Locked<[String]>([])
    let done = DispatchGroup()
    for _ in 0..<2 {
      done.enter()
      Thread {
        defer { done.leave() }
        guard
          let mailbox: AppGroupMailbox<Int> = try? container.mailbox(
            Int.self, limits: .init(maxMessages: 1_000, maxQuarantinedFiles: 1_000))
        else {
          failures.withLock { $0.append("open failed") }
          return
        }
        while !stop.load(ordering: .relaxed) {
          let start = Date()
          do {
            for claim in try mailbox.claimPending(limit: 1) {
              delivered.withLock { $0.append(claim.message) }
              try claim.acknowledge()
            }
          } catch {
            failures.withLock { $0.append("\(error)") }
          }
          let took = Date().timeIntervalSince(start)
          slowest.withLock { $0 = max($0, took) }
        }
      }.start()
    }
    var swaps = 0
    let total = 200
    for value in 0..<total {
      let id = try producer.enqueue(value)
      guard
        let name = container.names("pending").first(where: {
          $0.contains(id.uuidString.lowercased())
        })
      else { continue }
      let link = outside.appendingPathComponent("link-\(value)").path
      #expect(symlink(secretPath, link) == 0)
      if rename(link, container.path("pending", name)) == 0 { swaps += 1 }
    }
    // Drain what is left with a fresh consumer, then stop the others.
    let drain: AppGroupMailbox<Int> = try container.mailbox(
      Int.self, limits: .init(maxMessages: 1_000, maxQuarantinedFiles: 1_000))
    #expect(
      try waitUntil {
        for claim in try drain.claimPending() {
          delivered.withLock { $0.append(claim.message) }
          try claim.acknowledge()
        }
        return container.names("pending").isEmpty && container.names("claimed").isEmpty
      })
    stop.store(true, ordering: .relaxed)
    #expect(done.wait(timeout: .now() + 30) == .success)
    #expect(failures.withLock { $0 } == [])
    #expect(slowest.withLock { $0 } < 2, "a claim took longer than 2 s")
    let values = delivered.withLock { $0 }
    #expect(Set(values).count == values.count, "a message was delivered twice")
    #expect(values.allSatisfy { (0..<total).contains($0) })
    let quarantined = container.quarantined()
    #expect(quarantined.count == swaps)
    #expect(quarantined.allSatisfy { $0.reason == .unsafe })
    #expect(values.count + swaps >= total)
    #expect(watch.events() == [])
    #expect(try Data(contentsOf: URL(fileURLWithPath: secretPath)) == secret)
    #expect(try depth(drain) == 0)
  }

  @Test
  func
    `Hostile entries under claimed names are recovered or removed and then quarantined, never followed`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 3_600, claimTimeout: 60), clock: clock, diagnostics: recorder)
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    let secretPath = outside.appendingPathComponent("secret.txt").path
    try Data("\(secretMarker)".utf8).write(to: URL(fileURLWithPath: secretPath))
    let now = micros(clock)
    func claimedName(_ sequence: UInt64, enqueued: Int64) -> String {
      ClaimedName(
        message: PendingName(
          key: MessageKey(micros: enqueued, sequence: sequence), id: UUID(), attempts: 1),
        token: 0xABC, leaseUntilMicros: now - 1
      ).fileName
    }
    // Leases ran out; the first four are young messages, the last outlived its lifetime.
    let directory = container.path("claimed", claimedName(1, enqueued: now - 1_000))
    try FileManager.default.createDirectory(
      atPath: directory + "/x", withIntermediateDirectories: true)
    #expect(mkfifo(container.path("claimed", claimedName(2, enqueued: now - 1_000)), 0o600) == 0)
    #expect(
      symlink(secretPath, container.path("claimed", claimedName(3, enqueued: now - 1_000))) == 0)
    try container.plant("claimed", claimedName(4, enqueued: now - 1_000), [])
    let old = container.path("claimed", claimedName(5, enqueued: now - 7_200_000_000))
    try FileManager.default.createDirectory(atPath: old + "/y", withIntermediateDirectories: true)
    let watch = try AccessWatch([secretPath])
    try mailbox.enqueue("real")

    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["real"])
    #expect(container.names("pending") == [])
    #expect(container.names("claimed").count == 1)
    #expect(container.quarantineReasons() == ["malformed", "unsafe", "unsafe", "unsafe", "unsafe"])
    #expect(recorder.count(.abandonedClaimRecovered) == 4)
    #expect(recorder.count(.unsafeFileQuarantined) == 4)
    #expect(recorder.count(.malformedMessageQuarantined) == 1)
    #expect(watch.events() == [])
    #expect(try depth(mailbox) == 1)
  }

  @Test
  func
    `Depth counts only real messages, not directories, FIFOs, sockets or symlinks under message names (C07)`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<Note> = try container.mailbox(Note.self, clock: clock)
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    try Data("x".utf8).write(to: outside.appendingPathComponent("secret.txt"))
    try Data("{}".utf8).write(to: outside.appendingPathComponent("valid.msg"))
    let kinds = [
      "directory", "fifo", "socket", "dangling symlink", "symlink to a sensitive file",
      "symlink to a valid message",
    ]
    for (index, kind) in kinds.enumerated() {
      let id = UUID()
      _ = try Self.plantHostile(
        kind, in: container,
        name: pendingName(micros: micros(clock), sequence: UInt64(index + 1), id: id),
        id: id, micros: micros(clock), outside: outside)
    }
    try mailbox.enqueue(Note(text: "real"))
    #expect(try recountedDepth(mailbox) == 1)
    #expect(container.names("pending").count == kinds.count + 1)
    #expect(try mailbox.claimPending().map(\.message.text) == ["real"])
    #expect(try depth(mailbox) == 1)
  }
}
