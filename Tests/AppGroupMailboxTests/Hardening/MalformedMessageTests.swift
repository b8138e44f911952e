import Foundation
import Glibc
import Synchronization
import Testing

@testable import AppGroupMailbox

/// Point 4 of issue 3, cases C04 and C05(a): files under message names that do not read as
/// messages.
@Suite struct MalformedMessageTests {
  /// Rewrites the file of the pending message `id` in place with `transform` of its bytes.
  static func overwrite(
    _ container: TemporaryContainer, id: UUID, _ transform: ([UInt8]) -> [UInt8]
  )
    throws
  {
    let name = try #require(
      container.names("pending").first { $0.contains(id.uuidString.lowercased()) })
    let url = URL(fileURLWithPath: container.path("pending", name))
    let old = Array(try Data(contentsOf: url))
    let fd = open(url.path, O_WRONLY | O_TRUNC)
    try #require(fd >= 0)
    defer { close(fd) }
    let new = transform(old)
    #expect(new.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == new.count)
  }

  /// The corruptions of C04 and the quarantine reason each must give.
  static let corruptions: [(String, String)] = [
    ("random bytes", "malformed"), ("truncated JSON", "malformed"), ("wrong version", "future"),
    ("invalid UTF-8", "malformed"),
  ]

  static func corrupt(_ kind: String, _ bytes: [UInt8]) -> [UInt8] {
    switch kind {
    case "random bytes":
      // Fixed "random" bytes (a seeded generator), so the test is the same every run.
      var state: UInt64 = 0x9E37_79B9_7F4A_7C15
      return (0..<300).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
      }
    case "truncated JSON": return Array(bytes.prefix(bytes.count - 4))
    case "wrong version":
      return Array(
        String(decoding: bytes, as: UTF8.self).replacingOccurrences(
          of: "\"format\":1", with: "\"format\":2"
        ).utf8)
    default:
      let newline = bytes.firstIndex(of: UInt8(ascii: "\n"))!
      return Array(bytes[...newline]) + [0x22, 0xC3, 0x28, 0xFF, 0x22]
    }
  }

  /// Found by the second review of stop 36: a claim that quarantined a message and then could
  /// not recount the depth under the lock threw, and what it had claimed was lost to its caller
  /// (left in claimed/ until the lease ran out, a delivery counted).
  @Test func `A failed recount after a quarantine leaves the claimed messages to the caller`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    let a = try mailbox.enqueue("A")
    try mailbox.enqueue("B")
    try Self.overwrite(container, id: a) { Self.corrupt("truncated JSON", $0) }
    var claims: [AppGroupMailbox<String>.Claim] = []
    let (thrown, unfired) = thrownError(under: [.init(call: "flock", errno: EIO)]) {
      claims = try mailbox.claimPending(limit: 2)
    }
    #expect(unfired.isEmpty)
    #expect(thrown == nil)
    #expect(claims.map(\.message) == ["B"])
    for claim in claims { try claim.acknowledge() }
    #expect(container.names("claimed").isEmpty)
    #expect(container.quarantined().map(\.id) == [a])
  }

  @Test(arguments: corruptions)
  func `A corrupt message between two good ones is quarantined once and never retried (C04)`(
    kind: String, reason: String
  ) throws {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    try mailbox.enqueue("A")
    let b = try mailbox.enqueue("B \(secretMarker)")
    try mailbox.enqueue("C")
    try Self.overwrite(container, id: b) { Self.corrupt(kind, $0) }

    let claims = try mailbox.claimPending(limit: 2)
    #expect(claims.map(\.message) == ["A", "C"])
    #expect(container.quarantined().map(\.id) == [b])
    #expect(container.quarantineReasons() == [reason])
    #expect(recorder.all == [.malformedMessageQuarantined])
    for claim in claims { try claim.acknowledge() }
    clock.advance(3_600)
    #expect(try mailbox.claimPending().isEmpty)
    try mailbox.performMaintenance()
    #expect(recorder.all == [.malformedMessageQuarantined])
    #expect(container.names("quarantine").count == 1)
    #expect(try depth(mailbox) == 0)
  }

  @Test func `Ten thousand malformed files never push quarantine past its bound of 100 (C04)`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxMessages: 20_000, maxQuarantinedFiles: 100), clock: clock,
      diagnostics: recorder)
    let base = micros(clock) - 1_000_000
    for index in 0..<10_000 {
      try container.plant(
        "pending", pendingName(micros: base, sequence: UInt64(index + 1)),
        Array("\(secretMarker) \(index)".utf8))
    }
    try mailbox.enqueue("valid")
    let stop = Atomic<Bool>(false)
    let largest = Atomic<Int>(0)
    let sampler = DispatchSemaphore(value: 0)
    let quarantinePath = container.area("quarantine").path
    Thread {
      while !stop.load(ordering: .relaxed) {
        let count =
          (try? FileManager.default.contentsOfDirectory(atPath: quarantinePath).count) ?? 0
        if count > largest.load(ordering: .relaxed) { largest.store(count, ordering: .relaxed) }
        sched_yield()
      }
      sampler.signal()
    }.start()
    let claims = try mailbox.claimPending(limit: 1)
    stop.store(true, ordering: .relaxed)
    sampler.wait()
    #expect(claims.map(\.message) == ["valid"])
    #expect(container.names("quarantine").count == 100)
    #expect(largest.load(ordering: .relaxed) <= 100)
    #expect(container.names("pending") == [])
    #expect(recorder.count(.malformedMessageQuarantined) == 10_000)
    #expect(recorder.count(.quarantinedFileDiscarded) == 9_900)
    #expect(try depth(mailbox) == 1)
  }

  @Test
  func
    `A zero-length file and 4096 NUL bytes under message names are quarantined beside a valid message (C05a)`()
    throws
  {
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      clock: clock, diagnostics: recorder)
    let empty = UUID()
    let nul = UUID()
    try container.plant(
      "pending", pendingName(micros: micros(clock) - 2, sequence: 1, id: empty), [])
    try mailbox.enqueue("valid")
    try container.plant(
      "pending", pendingName(micros: micros(clock) + 1, sequence: 9, id: nul),
      [UInt8](repeating: 0, count: 4096))

    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message) == ["valid"])
    #expect(Set(container.quarantined().map(\.id)) == [empty, nul])
    #expect(container.quarantineReasons() == ["malformed", "malformed"])
    #expect(recorder.all == [.malformedMessageQuarantined, .malformedMessageQuarantined])
    #expect(container.names("pending") == [])
  }

  @Test func `A message whose init(from:) throws is quarantined and the next one is delivered`()
    throws
  {
    let container = try TemporaryContainer()
    let recorder = DiagnosticRecorder()
    let mailbox: AppGroupMailbox<Note> = try container.mailbox(Note.self, diagnostics: recorder)
    let poison = try mailbox.enqueue(Note(text: "poison"))
    try mailbox.enqueue(Note(text: "fine"))
    let claims = try mailbox.claimPending(limit: 1)
    #expect(claims.map(\.message) == [Note(text: "fine")])
    #expect(container.quarantined().map(\.id) == [poison])
    #expect(container.quarantineReasons() == ["malformed"])
    #expect(recorder.all == [.malformedMessageQuarantined])
  }

  @Test
  func `A message of another type stays pending for its consumer; an untyped one is accepted`()
    throws
  {
    let container = try TemporaryContainer()
    let recorder = DiagnosticRecorder()
    let other: AppGroupMailbox<String> = try container.mailbox(messageType: "Other")
    let untyped: AppGroupMailbox<String> = try container.mailbox(messageType: "")
    let mailbox: AppGroupMailbox<String> = try container.mailbox(diagnostics: recorder)
    let theirs = try other.enqueue("other")
    try untyped.enqueue("untyped")
    try mailbox.enqueue("mine")
    #expect(try mailbox.claimPending().map(\.message) == ["untyped", "mine"])
    #expect(container.quarantined().isEmpty)
    #expect(container.pendingNames().map(\.id) == [theirs])
    #expect(container.pendingNames().map(\.attempts) == [0])
    #expect(recorder.all.isEmpty)
    let delivered = try #require(try other.claimPending().first)
    #expect(delivered.id == theirs)
    #expect(delivered.deliveryCount == 1)
  }
}
