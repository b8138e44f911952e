import Foundation
import Testing

@testable import AppGroupMailbox

/// A header's `enqueuedAt` is any signed 64-bit count of microseconds (docs/FORMAT.md); a
/// hand-made file at either end used to make `mailboxctl` trap while printing it (`Int64` of a
/// double rounded up past 2^63 - 1), leaving the message in `claimed/` to crash the next run.
@Suite struct CLIExtremeDateTests {
  @Test(arguments: [
    // (enqueuedAt, as printed: the proleptic Gregorian calendar of gmtime(3))
    (Int64.max, "294247-01-10T04:00:54.775807Z"),
    (9_000_000_000_000_000_000, "287168-08-24T16:00:00.000000Z"),
    // Long past its lifetime: shown, then deleted as expired by the claim (as interop/python).
    (Int64.min, "-290308-12-21T19:59:05.224192Z"),
  ])
  func `A message enqueued at either end of the range is printed, and delivered unless expired`(
    enqueuedAt: Int64, printed: String
  ) throws {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(["create"] + container.arguments())
    try #require(created.status == 0, "\(created.stderr)")
    let id = UUID()
    let name = PendingName(
      key: MessageKey(micros: Int64(Date().timeIntervalSince1970 * 1_000_000), sequence: 1),
      id: id, attempts: 0)
    try container.plant(
      "pending", name.fileName,
      Array(
        try Envelope.encode(
          id: id, enqueuedAt: enqueuedAt, messageType: "", payload: Data("1".utf8))))
    let shown = try Mailboxctl.run(["show"] + container.arguments() + [id.uuidString])
    #expect(shown.status == 0, "\(shown.stderr)")
    #expect(shown.stdout.contains("enqueued at:     \(printed)\n"), "\(shown.stdout)")
    let listed = try Mailboxctl.run(["list", "--json"] + container.arguments())
    #expect(listed.status == 0, "\(listed.stderr)")
    let drained = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(drained.status == 0, "\(drained.stderr)")
    let lines = try jsonLines(drained.stdout)
    let delivered = enqueuedAt > 0
    #expect(lines.map { $0["id"] as? String } == (delivered ? [id.uuidString.lowercased()] : []))
    #expect(
      lines.map { $0["enqueuedAt"] as? String } == (delivered ? [printed] : []),
      "\(drained.stdout)")
    #expect(container.names("pending") == [])
    #expect(container.names("claimed") == [])
  }
}
