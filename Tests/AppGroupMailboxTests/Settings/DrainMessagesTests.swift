import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Issue 14, point 4: what drain says about handlers it cannot run and about dead letters.
@Suite struct DrainMessagesTests {
  @Test func `A non-executable --exec program is reported as permission denied`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let script = container.url.appendingPathComponent("handler").path
    #expect(FileManager.default.createFile(atPath: script, contents: Data("#!/bin/sh\n".utf8)))
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", script])
    #expect(result.status == 69)
    #expect(
      result.stderr
        == "mailboxctl: error: drain: --exec: permission denied: \(script) is not executable\n")
    let missing = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--exec", script + "-absent"])
    #expect(
      missing.stderr == "mailboxctl: error: drain: --exec: command not found: \(script)-absent\n")
    // A directory (searchable, so access(2) says X_OK) used to be run and fail with EACCES, 71.
    let directory = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--coprocess", container.url.path])
    #expect(directory.status == 69)
    let empty = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", ""])
    #expect(empty.status == 64)
    #expect(empty.stderr.hasPrefix("mailboxctl: error: drain: --exec needs a program to run\n"))
    #expect(
      directory.stderr
        == "mailboxctl: error: drain: --coprocess: \(container.url.path) is a directory\n")
  }

  @Test
  func `A dead letter prints one line with its id and reason, and the summary reads naturally`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxDeliveryAttempts: 1))
    // Delivered once elsewhere and released: drain's claim finds it past its attempts.
    let id = try raw.enqueue(Data("1".utf8)).id.uuidString.lowercased()
    try #require(try raw.claimPending(limit: 1).first).release()
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", "false"])
    #expect(result.status == 0)
    let file = try #require(container.names("quarantine").first)
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(lines.count == 2)
    #expect(
      lines.first
        == "mailboxctl: drain: message \(id): dead letter after 1 delivery (the mailbox's "
        + "maxDeliveryAttempts); moved to quarantine as \(file)")
    #expect(
      lines.last?.hasPrefix("mailboxctl: drain: delivered 0, released 0, quarantined 1 in ") == true
    )
  }

  /// Found by a new user's run: `claim` said it moved a file that is no message to quarantine,
  /// as its help says drain does, but drain said only "quarantined 1" in its summary.
  @Test func `Drain says it moved a file that is no message to quarantine, as claim does`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    try raw.enqueue(Data("1".utf8))
    let name = try #require(container.names("pending").first)
    let file = container.area("pending").appendingPathComponent(name)
    try Data("{\"v\":1,".utf8).write(to: file)  // cut short: no message
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", "true"])
    #expect(result.status == 0, "\(result.stderr)")
    let lines = result.stderr.split(separator: "\n").map(String.init)
    #expect(lines.count == 2, "\(result.stderr)")
    #expect(
      lines.first
        == "mailboxctl: drain: moved 1 file that is no message it can deliver (malformed or "
        + "unsafe) to quarantine ('mailboxctl quarantine list' shows it)")
    #expect(
      lines.last?.hasPrefix("mailboxctl: drain: delivered 0, released 0, quarantined 1 in ") == true
    )
  }

  /// Found by a review of docs/SECURITY.md: with `maxQuarantinedFiles` 0 such a file is
  /// deleted, but drain and claim said they moved it to quarantine, where nothing was listed.
  @Test func `Drain and claim say a file that is no message was deleted when none are kept`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxQuarantinedFiles: 0))
    for command in ["drain", "claim"] {
      try raw.enqueue(Data("1".utf8))
      let name = try #require(container.names("pending").first)
      let file = container.area("pending").appendingPathComponent(name)
      try Data("{\"v\":1,".utf8).write(to: file)  // cut short: no message
      let result = try Mailboxctl.run([command] + container.arguments())
      #expect(result.status == 0, "\(result.stderr)")
      #expect(
        result.stderr.split(separator: "\n").first.map(String.init)
          == "mailboxctl: \(command): deleted 1 file that is no message it can deliver "
          + "(malformed or unsafe): the mailbox keeps no quarantined files (maxQuarantinedFiles 0)")
      #expect(container.names("pending").isEmpty)
      #expect(container.names("quarantine").isEmpty)
    }
  }

  /// Found by a new user's review: a dead letter the quarantine bound later deleted was
  /// reported as "moved to quarantine" and never mentioned again, and one deleted because
  /// quarantine keeps nothing was not reported at all.
  @Test func `A dead letter the quarantine bound deletes is reported, as is one never kept`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(
      limits: .init(maxQuarantinedFiles: 1, maxDeliveryAttempts: 1))
    var ids: [String] = []
    for number in 0..<2 {
      ids.append(try raw.enqueue(Data("\(number)".utf8)).id.uuidString.lowercased())
    }
    // Both delivered once elsewhere and released: drain's claims find them past their attempts.
    for claim in try raw.claimPending(limit: 2) { try claim.release() }
    let result = try Mailboxctl.run(["drain"] + container.arguments())
    #expect(result.status == 0)
    // One claim made both dead letters, the second trimming the first before any listing.
    let lines = result.stderr.split(separator: "\n").map(String.init)
    let file = try #require(container.names("quarantine").first)
    #expect(container.names("quarantine").count == 1)
    #expect(file.contains(ids[1]))
    #expect(
      Array(lines.dropLast())
        == [
          "mailboxctl: drain: message \(ids[1]): dead letter after 1 delivery (the mailbox's "
            + "maxDeliveryAttempts); moved to quarantine as \(file)",
          "mailboxctl: drain: quarantine was full: its oldest file was deleted; it keeps at most "
            + "1 file (maxQuarantinedFiles)",
        ])
    // Dead letters made one at a time (a handler failing each one's last delivery): the second
    // trims the first, which was shown, and is named.
    let next = try (2..<4).map { try raw.enqueue(Data("\($0)".utf8)).id.uuidString.lowercased() }
    let later = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", "false"])
    #expect(later.status == 75)
    let shown = try #require(
      later.stderr.split(separator: "\n").first {
        $0.hasPrefix("mailboxctl: drain: message \(next[0]): dead letter after 1 delivery")
      })
    let shownFile = try #require(shown.split(separator: " ").last.map(String.init))
    #expect(
      later.stderr.contains(
        "mailboxctl: drain: message \(next[0]): dead letter \(shownFile) was deleted from "
          + "quarantine, which keeps at most 1 file (maxQuarantinedFiles)\n"))
    #expect(container.names("quarantine").map { $0.contains(next[1]) } == [true])

    let keepsNothing = try TemporaryContainer()
    let none = try keepsNothing.rawMailbox(
      limits: .init(maxQuarantinedFiles: 0, maxDeliveryAttempts: 1))
    try none.enqueue(Data("1".utf8))
    try #require(try none.claimPending(limit: 1).first).release()
    let deleted = try Mailboxctl.run(["drain"] + keepsNothing.arguments())
    #expect(deleted.status == 0)
    #expect(
      deleted.stderr.hasPrefix(
        "mailboxctl: drain: a dead letter was deleted, not quarantined: the mailbox keeps no "
          + "quarantined files (maxQuarantinedFiles 0)\n"))
    #expect(keepsNothing.names("quarantine").isEmpty)

    // Several dead letters of one claim, all kept: each named once, none said deleted (found
    // by an adversarial review: the later diagnostics counted as dead letters never shown).
    let roomy = try TemporaryContainer()
    let kept = try roomy.rawMailbox(limits: .init(maxDeliveryAttempts: 1))
    for number in 0..<3 { try kept.enqueue(Data("\(number)".utf8)) }
    for claim in try kept.claimPending(limit: 3) { try claim.release() }
    let three = try Mailboxctl.run(["drain"] + roomy.arguments())
    #expect(three.status == 0)
    let noted = three.stderr.split(separator: "\n").dropLast()
    #expect(noted.count == 3, "\(three.stderr)")
    #expect(noted.allSatisfy { $0.contains(": dead letter after 1 delivery") })
    #expect(roomy.names("quarantine").count == 3)
  }

  @Test
  func `A handler failing a message's last delivery dead-letters it at once, not after a retry`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxDeliveryAttempts: 2))
    let id = try raw.enqueue(Data("1".utf8)).id.uuidString.lowercased()
    let first = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--retry-delay", "3600", "--exec", "false"])
    #expect(first.status == 75)
    #expect(first.stderr.contains("message \(id): handler exit status 1; released, retry in "))
    #expect(container.names("delayed").count == 1)
    // The retry is due at once when promoted by hand: move its due time to now.
    let delayed = try #require(container.names("delayed").first)
    let parsed = try #require(DelayedName(parsing: delayed))
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    try FileManager.default.moveItem(
      atPath: container.path("delayed", delayed),
      toPath: container.path(
        "delayed", DelayedName(dueMicros: now, message: parsed.message).fileName))
    let second = try Mailboxctl.run(["drain"] + container.arguments() + ["--exec", "false"])
    #expect(second.status == 75)
    let file = try #require(container.names("quarantine").first)
    let lines = second.stderr.split(separator: "\n").map(String.init)
    #expect(lines.count == 3)
    #expect(
      lines.first
        == "mailboxctl: drain: message \(id): handler exit status 1; that was its last delivery")
    #expect(
      lines.dropFirst().first
        == "mailboxctl: drain: message \(id): dead letter after 2 deliveries (the mailbox's "
        + "maxDeliveryAttempts); moved to quarantine as \(file)")
    #expect(
      lines.last?.hasPrefix("mailboxctl: drain: delivered 0, released 0, quarantined 1 in ") == true
    )
    #expect(container.names("delayed") == [] && container.names("pending") == [])
  }
}
