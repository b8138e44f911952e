import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Found by an adversarial run of both implementations on one spool: the Python side took
/// values the library refuses, and each cost a message or the mailbox. A lease of 463 days (or
/// of less than 1 µs) let a Swift claim take a message a Python consumer still held; a count
/// bound of 10^16 wrote a settings file no opener reads (every later opener exited 69); an
/// enqueue date past 2286 or before 1970 printed "published" and made a name the next claim
/// quarantined as foreign; a date older than the lifetime printed "published" and the first
/// claim deleted it; and an opener that found a group-shared namespace directory without its
/// areas made them private, locking the group out.
@Suite(.enabled(if: PythonSpool.available, "python3 is not installed"))
struct PythonBoundsTests {
  static let refusedOptions: [([String], String)] = [
    (["--claim-timeout", "40000000"], "invalid limit: 'claimTimeout' is out of range"),
    (["--claim-timeout", "-5"], "invalid limit: 'claimTimeout' is out of range"),
    (["--claim-timeout", "0.0000001"], "invalid limit: 'claimTimeout' is out of range"),
    (["--max-messages", "10000000000000000"], "invalid limit: 'maxMessages' is out of range"),
    (
      ["--max-quarantined", "9000000000000000"],
      "invalid limit: 'maxQuarantinedFiles' is out of range"
    ),
    (
      ["--max-attempts", "9000000000000000"],
      "invalid limit: 'maxDeliveryAttempts' is out of range"
    ),
    (
      ["--enqueued-at-us=10000000000000000"],
      "--enqueued-at-us needs an integer from 0 to 9999999999999999 (1970 to 2286)"
    ),
    (
      ["--enqueued-at-us=-1"],
      "--enqueued-at-us needs an integer from 0 to 9999999999999999 (1970 to 2286)"
    ),
  ]

  @Test(arguments: refusedOptions)
  func `A value the library refuses is a usage error, and nothing is made`(
    options: [String], error: String
  ) throws {
    let container = try TemporaryContainer()
    let refused = try PythonSpool.start(
      "enqueue", container, options, stdin: Data("1".utf8)
    ).finish()
    #expect(refused.status == 2, "\(refused.stderr)")
    #expect(refused.stderr.hasSuffix("agm_spool.py: error: \(error)\n"), "\(refused.stderr)")
    #expect(refused.stdout.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: container.url.path + "/AppGroupMailbox"))
  }

  @Test func `The edges of the ranges are taken`() throws {
    let container = try TemporaryContainer()
    let outcomes = try PythonSpool.enqueue(
      ["1"], into: container,
      [
        "--claim-timeout", "31622400", "--max-messages", "8999999999999999",
        "--lifetime", "1e300", "--enqueued-at-us=0",
      ])
    #expect(outcomes.map(\.outcome) == ["published"])
    let mailbox = try container.rawMailbox()
    #expect(mailbox.settings.maxMessages == 8_999_999_999_999_999)
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.enqueuedAt) == [Date(timeIntervalSince1970: 0)])
  }

  @Test func `A given date older than the lifetime writes nothing and exits 65`() throws {
    let container = try TemporaryContainer()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let expired = try PythonSpool.start(
      "enqueue", container, ["--lifetime", "60", "--enqueued-at-us=\(now - 61_000_000)"],
      stdin: Data("1".utf8)
    ).finish()
    #expect(expired.status == 65, "\(expired.stderr)")
    #expect(expired.lines.map { $0.split(separator: " ").last } == ["expired"])
    for area in ["tmp", "pending", "delayed", "claimed", "quarantine"] {
      #expect(container.names(area).isEmpty, "\(area)")
    }
    // A date inside the lifetime is published, at that date.
    let kept = try PythonSpool.enqueue(
      ["2"], into: container, ["--enqueued-at-us=\(now - 30_000_000)"])
    #expect(kept.map(\.outcome) == ["published"])
    #expect(container.names("pending").count == 1)
  }

  @Test func `A group-shared namespace found without its areas gets them for the group`() throws {
    let container = try TemporaryContainer()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    try FileManager.default.createDirectory(
      atPath: namespace, withIntermediateDirectories: true)
    // As `mailboxctl create --group-shared` leaves it between its mkdir and its areas.
    try #require(chmod(namespace, 0o2770) == 0, "chmod: errno \(errno)")
    _ = try PythonSpool.enqueue(["1"], into: container)
    var modes: [String: mode_t] = [:]
    for entry in ["tmp", "pending", "claimed", "quarantine", "delayed", "state", "settings"] {
      var info = stat()
      try #require(lstat(namespace + "/" + entry, &info) == 0, "\(entry)")
      modes[entry] = info.st_mode & 0o7777
    }
    #expect(
      modes == [
        "tmp": 0o2770, "pending": 0o2770, "claimed": 0o2770, "quarantine": 0o2770,
        "delayed": 0o2770, "state": 0o660, "settings": 0o660,
      ])
    #expect(try container.rawMailbox().settings.permissions == .groupShared)
  }

  /// Found by a review of the above: a retry delay of infinity raised OverflowError out of the
  /// Python release (and enqueue); the library clamps it to the last representable instant.
  @Test func `An infinite delay is clamped to 2286 and NaN is refused`() throws {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)
    let released = try PythonSpool.run("release-delay", container, ["--delay", "inf"])
    #expect(released.lines.count == 1)
    #expect(container.names("delayed").map { String($0.prefix(17)) } == ["9999999999999999-"])
    let expired = try PythonSpool.start(
      "enqueue", container, ["--delay", "inf"], stdin: Data("2".utf8)
    ).finish()
    #expect(expired.status == 65, "\(expired.stderr)")
    #expect(expired.lines.map { $0.split(separator: " ").last } == ["expired"])
    // A delay of minus infinity is no delay: back in line at once (found by a review).
    _ = try PythonSpool.enqueue(["3"], into: container)
    #expect(try PythonSpool.run("release-delay", container, ["--delay=-inf"]).lines.count == 1)
    #expect(container.names("pending").count == 1)
    let refused = try PythonSpool.start(
      "release-delay", container, ["--delay", "nan"]
    ).finish()
    #expect(refused.status == 2)
    #expect(
      refused.stderr.hasSuffix("agm_spool.py: error: --delay needs a number of seconds, not NaN\n"))
    #expect(container.names("delayed").count == 1)
  }
}
