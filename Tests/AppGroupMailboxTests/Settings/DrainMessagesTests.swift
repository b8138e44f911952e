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
