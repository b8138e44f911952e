import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// `quarantine requeue` of dead letters the mailbox cannot take back as they are. Found by an
/// adversarial review.
@Suite struct QuarantineRequeueTests {
  func ctl(_ container: TemporaryContainer, _ arguments: [String]) throws -> Finished {
    try Mailboxctl.run([arguments[0]] + container.arguments() + Array(arguments.dropFirst()))
  }

  /// Makes a dead letter of each of `count` messages: enqueued (at `enqueuedAt` when given),
  /// then failed by a handler on their one allowed delivery.
  func deadLetters(_ container: TemporaryContainer, _ count: Int, enqueuedAt: Date? = nil) throws {
    for number in 0..<count {
      let date = enqueuedAt.map { ["--enqueued-at", ISO8601.format($0)] } ?? []
      #expect(try ctl(container, ["enqueue", "--data", "\(number)"] + date).status == 0)
      #expect(try ctl(container, ["drain", "--exec", "false"]).status == 75)
    }
  }

  /// Requeued, a message past its lifetime was deleted as expired by the next claim, without a
  /// word: the quarantine held its only copy.
  @Test func `A dead letter past its lifetime stays in quarantine`() throws {
    let container = try TemporaryContainer()
    _ = try ctl(
      container, ["create", "--max-delivery-attempts", "1", "--message-lifetime", "3600"])
    try deadLetters(container, 1, enqueuedAt: Date().addingTimeInterval(-1800))
    let file = try #require(container.names("quarantine").first)
    _ = try ctl(container, ["config", "--message-lifetime", "60"])
    let refused = try ctl(container, ["quarantine", "requeue", "--all"])
    #expect(refused.status == 65)
    #expect(refused.stdout == "expired \(file)\n")
    #expect(
      refused.stderr
        == "mailboxctl: quarantine: \(file) stays in quarantine: its enqueue date is the message "
        + "lifetime or more ago, so a claim would delete it; raise the lifetime first "
        + "('mailboxctl config --message-lifetime'), or purge it\n")
    #expect(container.names("quarantine") == [file])
    #expect(container.names("pending") == [])
    // As the note says: with a longer lifetime it goes back, and is delivered.
    _ = try ctl(container, ["config", "--message-lifetime", "3600"])
    #expect(try ctl(container, ["quarantine", "requeue", "--all"]).status == 0)
    let claimed = try ctl(container, ["claim"])
    #expect(claimed.stdout.hasSuffix(" 0\n"), "\(claimed.stdout)")
  }

  /// The full mailbox's error gave an enqueue's advice (use discardOldest), which a requeue
  /// ignores, and said nothing of the files it did not try.
  @Test func `A full mailbox stops requeue with advice that applies to it`() throws {
    let container = try TemporaryContainer()
    _ = try ctl(container, ["create", "--max-delivery-attempts", "1", "--max-messages", "1"])
    try deadLetters(container, 2)
    #expect(try ctl(container, ["enqueue", "--data", "\"stays\""]).status == 0)
    for overflow in ["reject-newest", "discard-oldest"] {
      _ = try ctl(container, ["config", "--overflow", overflow])
      let full = try ctl(container, ["quarantine", "requeue", "--all"])
      #expect(full.status == 75)
      #expect(full.stderr.hasPrefix("mailboxctl: error: quarantine: requeue "), "\(full.stderr)")
      #expect(
        full.stderr.hasSuffix(
          ": the mailbox is full (maxMessages): a requeue never deletes a pending message to "
            + "make room, whatever the overflow policy; wait for consumers or raise the bound "
            + "('mailboxctl config --max-messages'); the file after it was not tried\n"),
        "\(full.stderr)")
      #expect(container.names("quarantine").count == 2)
    }
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.count == 1)
  }
}
