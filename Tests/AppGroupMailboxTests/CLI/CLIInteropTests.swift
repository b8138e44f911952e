import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `mailboxctl` and typed Swift processes share mailboxes both ways; a killed drain loses
/// nothing.
@Suite struct CLIInteropTests {
  @Test func `A typed Swift producer's messages come out of mailboxctl drain`() throws {
    let container = try TemporaryContainer()
    let produced = try Processes.runWorker(["typed-produce", container.url.path, "jobs", "1", "3"])
    #expect(produced.status == 0)
    let result = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(result.status == 0)
    let lines = try jsonLines(result.stdout)
    #expect(
      lines.map { $0["messageType"] as? String }
        == Array(repeating: "Job", count: 3))
    #expect(lines.map { $0["deliveryCount"] as? Int } == [1, 1, 1])
    let messages = lines.compactMap { $0["message"] as? [String: Any] }
    #expect(messages.map { $0["number"] as? Int } == [1, 2, 3])
    #expect(messages.map { $0["text"] as? String } == ["job 1 é", "job 2 é", "job 3 é"])
  }

  @Test func `Messages from mailboxctl enqueue reach a typed Swift consumer`() throws {
    let container = try TemporaryContainer()
    let untyped = "{\"number\":1,\"text\":\"one\"}\n{\"text\":\"twö\",\"number\":2}\n"
    #expect(
      try Mailboxctl.run(
        ["enqueue"] + container.arguments() + ["--lines"], stdin: Data(untyped.utf8)
      )
      .status == 0)
    #expect(
      try Mailboxctl.run(
        ["enqueue"] + container.arguments() + [
          "--type", "MailboxTestWorker.Job", "--data", "{\"number\":3,\"text\":\"three\"}",
        ]
      ).status == 0)
    #expect(
      try Mailboxctl.run(
        ["enqueue"] + container.arguments() + [
          "--type", "Someone.Else", "--data", "{\"number\":4,\"text\":\"four\"}",
        ]
      ).status == 0)
    let consumed = try Processes.runWorker(["typed-consume", container.url.path, "jobs"])
    #expect(consumed.status == 0)
    #expect(
      consumed.lines == [
        "{\"number\":1,\"text\":\"one\"}", "{\"number\":2,\"text\":\"twö\"}",
        "{\"number\":3,\"text\":\"three\"}",
      ])
    // Another type's message stays pending for its consumer; an old qualified tag of the same
    // type name (`MailboxTestWorker.Job`) was taken.
    let inspector = try container.rawMailbox().inspector
    #expect(try inspector.entries(in: [.quarantined]).isEmpty)
    #expect(try inspector.entries(in: [.pending]).count == 1)
  }

  @Test
  func
    `A drain killed with SIGKILL mid-way, run again, delivers everything once but the in-flight message`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let ids = try (0..<40).map { try mailbox.enqueue(Data(String($0).utf8)).id }
    let log = container.url.appendingPathComponent("log")
    let handler = [
      "--exec", "sh", "-c", "echo \"$(cat) $MAILBOX_DELIVERY_COUNT\" >> '\(log.path)'; sleep 0.02",
    ]
    func logged() -> [(Int, Int)] {
      ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map {
        let parts = $0.split(separator: " ")
        return (Int(parts[0])!, Int(parts[1])!)
      }
    }
    let first = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--claim-timeout", "1"] + handler)
    #expect(waitUntil(deadline: 60) { logged().count >= 10 })
    first.signal(SIGKILL)
    let killed = try first.finish()
    #expect(killed.reason == .uncaughtSignal)
    let inFlight = try mailbox.inspector.entries(in: [.claimed])
    #expect(inFlight.count <= 1)
    let inFlightValues = Set(inFlight.compactMap { entry in ids.firstIndex(of: entry.id!) })
    #expect(
      waitUntil(deadline: 30) {
        inFlight.allSatisfy { ($0.leaseExpiresAt ?? .distantFuture) < Date() }
      })
    let second = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--claim-timeout", "1"] + handler)
    #expect(second.status == 0)
    let deliveries = logged()
    #expect(Set(deliveries.map(\.0)) == Set(0..<40))
    var counts: [Int: Int] = [:]
    for (value, _) in deliveries { counts[value, default: 0] += 1 }
    let duplicated = Set(counts.filter { $0.value > 1 }.keys)
    #expect(duplicated.isSubset(of: inFlightValues))
    #expect(counts.values.allSatisfy { $0 <= 2 })
    #expect(
      deliveries.filter { duplicated.contains($0.0) }.map(\.1).sorted()
        == duplicated.flatMap { _ in [1, 2] })
    let status = try mailbox.inspector.status()
    #expect(status.pending == 0)
    #expect(status.claimed == 0)
    #expect(status.quarantined == 0)
  }
}
