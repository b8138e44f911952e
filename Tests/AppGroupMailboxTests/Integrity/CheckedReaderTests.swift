import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 16, step 1: one checked reader behind every path that reads a message file.
@Suite struct CheckedReaderTests {
  /// The verdict of the checked reader on `name` in `pending/`, as a word.
  private func verdict(
    _ mailbox: AppGroupMailbox<String>, _ name: String, id: UUID? = nil, checkType: Bool = false
  ) throws -> String {
    let spool = mailbox.spool
    switch try spool.readMessage(
      spool.directories.pending, name, id: id, checkType: checkType)
    {
    case .success: return "ok"
    case .failure(.otherType): return "otherType"  // with the identity of the file read
    case .failure(let reason): return "\(reason)"
    }
  }

  @Test func `A small file is read into a buffer sized by the file, not by the payload limit`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxPayloadBytes: AppGroupMailboxLimits.payloadCeiling), clock: FakeClock())
    try mailbox.enqueue("small")
    let name = try #require(container.names("pending").first)
    let spool = mailbox.spool
    let read = try spool.readMessage(spool.directories.pending, name).get()
    #expect(String(decoding: read.message, as: UTF8.self) == "\"small\"")
    #expect(read.bytes.capacity < 4096)
    let envelope = try #require(try mailbox.inspector.envelope(name, includeMessage: true))
    #expect(envelope.message == read.message)
  }

  @Test func `Each kind of bad entry gets one verdict and one quarantine reason`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(maxPayloadBytes: 1024), clock: clock)
    let now = micros(clock)
    func planted(_ bytes: [UInt8], id: UUID = UUID(), sequence: UInt64) throws -> (String, UUID) {
      let name = pendingName(micros: now, sequence: sequence, id: id)
      try container.plant("pending", name, bytes)
      return (name, id)
    }
    let goodID = UUID()
    let good = try planted(envelope(id: goodID, micros: now, text: "ok"), id: goodID, sequence: 1)
    let other = UUID()
    let wrongID = try planted(envelope(id: other, micros: now, text: "x"), sequence: 2)
    let future = try planted(envelope(id: UUID(), micros: now, text: "x", format: 2), sequence: 3)
    let garbage = try planted(Array("not an envelope".utf8), sequence: 4)
    let large = try planted(
      envelope(id: UUID(), micros: now, text: String(repeating: "x", count: 2048)), sequence: 5)
    let typed = try planted(
      envelope(id: UUID(), micros: now, text: "x", type: "Other"), sequence: 6)
    let fifo = pendingName(micros: now, sequence: 7)
    #expect(mkfifo(container.path("pending", fifo), 0o600) == 0)
    let symlinked = pendingName(micros: now, sequence: 8)
    #expect(symlink(container.path("pending", good.0), container.path("pending", symlinked)) == 0)
    let linked = try planted(envelope(id: UUID(), micros: now, text: "x"), sequence: 9)
    #expect(link(container.path("pending", linked.0), container.path("tmp", "second")) == 0)

    #expect(try verdict(mailbox, good.0, id: good.1, checkType: true) == "ok")
    #expect(try verdict(mailbox, wrongID.0, id: wrongID.1) == "malformed")
    #expect(try verdict(mailbox, wrongID.0) == "ok")
    #expect(try verdict(mailbox, future.0) == "future")
    #expect(try verdict(mailbox, garbage.0) == "malformed")
    #expect(try verdict(mailbox, large.0) == "oversized")
    #expect(try verdict(mailbox, typed.0, checkType: true) == "otherType")
    #expect(try verdict(mailbox, typed.0) == "ok")
    #expect(try verdict(mailbox, fifo) == "unsafe")
    #expect(try verdict(mailbox, symlinked) == "unsafe")
    #expect(try verdict(mailbox, linked.0) == "linked")
    #expect(try verdict(mailbox, "gone") == "vanished")
    let reasons: [Spool.ReadFailure: QuarantineReason] = [
      .unsafe: .unsafe, .linked: .unsafe, .oversized: .oversized, .malformed: .malformed,
      .future: .future, .otherType(FileIdentity(stat())): .wrongtype,
    ]
    for (failure, reason) in reasons { #expect(failure.quarantine == reason) }
    // The inspector shows the same verdict as the reason a file is not a readable envelope.
    let shown: [(String, String?)] = [
      (good.0, nil), (future.0, "future"), (garbage.0, "malformed"), (large.0, "oversized"),
      (fifo, "unsafe"), (symlinked, "unsafe"), (linked.0, "linked"),
    ]
    for (name, reason) in shown {
      let envelope = try #require(try mailbox.inspector.envelope(name), "\(name)")
      #expect(envelope.unreadableReason == reason, "\(name)")
      #expect((envelope.format == nil) == (reason != nil), "\(name)")
    }
  }
}
