import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Found by an adversarial review: `claim` deleted expired messages, dead-lettered messages
/// (and, past the quarantine bound, deleted dead letters) and quarantined files without a word
/// and exited 0, while drain reports each: a script's `claim | while read` loop had no trace.
@Suite struct ClaimReportTests {
  func ctl(_ container: TemporaryContainer, _ arguments: [String]) throws -> Finished {
    try Mailboxctl.run([arguments[0]] + container.arguments() + Array(arguments.dropFirst()))
  }

  @Test func `Claim says which messages it deleted as expired`() throws {
    let container = try TemporaryContainer()
    _ = try ctl(container, ["create", "--message-lifetime", "3600"])
    let old = ISO8601.format(Date().addingTimeInterval(-1800))
    #expect(try ctl(container, ["enqueue", "--data", "1", "--enqueued-at", old]).status == 0)
    _ = try ctl(container, ["config", "--message-lifetime", "60"])
    let claim = try ctl(container, ["claim"])
    #expect(claim.status == 0)
    #expect(claim.stdout == "")
    #expect(
      claim.stderr
        == "mailboxctl: claim: deleted 1 expired message (older than the mailbox's message "
        + "lifetime), never delivered\n")
  }

  @Test func `Claim names its dead letters and the ones the quarantine bound deleted`() throws {
    let container = try TemporaryContainer()
    _ = try ctl(
      container, ["create", "--max-delivery-attempts", "1", "--max-quarantined-files", "1"])
    for number in 1...3 {
      #expect(try ctl(container, ["enqueue", "--data", "\(number)"]).status == 0)
    }
    // Each claim dead-letters the message released before it (its one delivery spent); the
    // bound of 1 then deletes the dead letter before it.
    var ids: [String] = []
    var stderr = ""
    for _ in 1...3 {
      let claim = try ctl(container, ["claim"])
      stderr += claim.stderr
      let fields = claim.stdout.split(separator: " ")
      ids.append(String(fields[2]))
      #expect(try ctl(container, ["release", String(fields[0])]).status == 0)
    }
    let last = try ctl(container, ["claim"])
    #expect(last.status == 0)
    #expect(last.stdout == "")
    stderr += last.stderr
    let lines = stderr.split(separator: "\n").map(String.init)
    for id in ids {
      #expect(
        lines.filter {
          $0.hasPrefix("mailboxctl: claim: message \(id): dead letter after 1 delivery (the ")
        }.count == 1, "\(stderr)")
    }
    #expect(
      lines.filter {
        $0 == "mailboxctl: claim: quarantine was full: its oldest file was deleted; it keeps at "
          + "most 1 file (maxQuarantinedFiles)"
      }.count == 2, "\(stderr)")
    // Dead letters have their own lines: no line counts them again as files moved.
    #expect(!stderr.contains("claim: moved "), "\(stderr)")
    #expect(container.names("quarantine").count == 1)
  }

  @Test func `Claim counts the files it quarantined as no message`() throws {
    let container = try TemporaryContainer()
    _ = try ctl(container, ["create"])
    let garbage = container.area("pending").appendingPathComponent(
      String(Int64(Date().timeIntervalSince1970 * 1_000_000)) + "-00000000000000000099-"
        + UUID().uuidString.lowercased() + "-0.msg")
    try Data("not an envelope".utf8).write(to: garbage)
    let claim = try ctl(container, ["claim"])
    #expect(claim.status == 0)
    #expect(claim.stdout == "")
    #expect(
      claim.stderr
        == "mailboxctl: claim: moved 1 file that is no message it can deliver (malformed or "
        + "unsafe) to quarantine ('mailboxctl quarantine list' shows it)\n")
  }
}
