import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Shell-level claims with the built binary: `mailboxctl claim`, then `ack`, `release` and
/// `renew` with the printed token, from separate processes.
@Suite struct CLIClaimTokenTests {
  /// One claim as `claim --json` prints it.
  struct Printed {
    var token: String
    var leaseUntil: Date
    var id: String
    var deliveryCount: Int
    var message: Int
  }

  func enqueue(_ container: TemporaryContainer, _ count: Int) throws {
    let result = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--lines"],
      stdin: Data((1...count).map { "\($0)\n" }.joined().utf8))
    try #require(result.status == 0)
  }

  func claim(_ container: TemporaryContainer, _ options: [String] = []) throws -> [Printed] {
    let result = try Mailboxctl.run(["claim"] + container.arguments() + ["--json"] + options)
    try #require(result.status == 0, "\(result.stderr)")
    return try jsonLines(result.stdout).map { object in
      Printed(
        token: try #require(object["token"] as? String),
        leaseUntil: try #require(ISO8601.parse(object["leaseUntil"] as? String ?? "")),
        id: try #require(object["id"] as? String),
        deliveryCount: try #require(object["deliveryCount"] as? Int),
        message: try #require(object["message"] as? Int))
    }
  }

  func run(_ command: String, _ container: TemporaryContainer, _ rest: [String]) throws
    -> Finished
  {
    try Mailboxctl.run([command] + container.arguments() + rest)
  }

  func stale(_ command: String, _ token: String) -> String {
    "mailboxctl: error: \(command): claim \(token) no longer exists: it was acknowledged or "
      + "released, or its lease ran out and it was recovered; nothing was changed\n"
  }

  @Test func `Claim prints token, lease and message; ack deletes it; a second ack exits 66`()
    throws
  {
    let container = try TemporaryContainer()
    try enqueue(container, 2)
    let before = Date()
    let result = try run("claim", container, [])
    #expect(result.status == 0)
    let fields = result.stdout.dropLast().split(separator: " ").map(String.init)
    try #require(fields.count == 4)
    #expect(result.stdout.hasSuffix(" 1\n"))
    let (token, id) = (fields[0], fields[2])
    #expect(token.hasPrefix(id + "."))
    let lease = try #require(ISO8601.parse(fields[1]))
    #expect(lease > before.addingTimeInterval(599) && lease < Date().addingTimeInterval(601))
    #expect(container.names("claimed").count == 1)
    #expect(container.names("claimed")[0].contains(String(token.suffix(17))))
    let ack = try run("ack", container, [token])
    #expect(ack.status == 0)
    #expect(ack.stdout == "" && ack.stderr == "")
    #expect(container.names("claimed").isEmpty)
    #expect(container.names("pending").count == 1)
    let again = try run("ack", container, [token])
    #expect(again.status == 66)
    #expect(again.stderr == stale("ack", token))
    #expect(container.names("pending").count == 1)
  }

  @Test func `A multi-line message is printed on one line that read splits into four fields`()
    throws
  {
    let container = try TemporaryContainer()
    let enqueued = try Mailboxctl.run(
      ["enqueue"] + container.arguments(), stdin: Data("{\n  \"a\": [1,\n\t2]\n}\n".utf8))
    try #require(enqueued.status == 0)
    let location = "--container '\(container.url.path)' --namespace jobs"
    let script =
      "\"$0\" claim \(location) | while read -r token lease id message; do "
      + "\"$0\" ack \(location) \"$token\" && printf '%s|%s\\n' \"$id\" \"$message\"; done"
    let result = try Processes.start(
      URL(fileURLWithPath: "/bin/sh"), ["-c", script, Mailboxctl.url.path]
    ).finish()
    #expect(result.status == 0)
    let id = enqueued.stdout.dropLast()
    #expect(result.stdout == "\(id)|{   \"a\": [1, \t2] }\n")
    #expect(container.names("claimed").isEmpty && container.names("pending").isEmpty)
  }

  @Test func `Release puts the message back first in line`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 3)
    let first = try #require(try claim(container).first)
    #expect(first.message == 1)
    #expect(try run("release", container, [first.token]).status == 0)
    let again = try claim(container, ["--limit", "5"])
    #expect(again.map(\.message) == [1, 2, 3])
    #expect(again.map(\.deliveryCount) == [2, 1, 1])
    #expect(again[0].id == first.id && again[0].token != first.token)
  }

  @Test func `Release --retry-after keeps the message out of line until it is due`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 3)
    let first = try #require(try claim(container).first)
    let released = try run("release", container, ["--retry-after", "3600", first.token])
    #expect(released.status == 0)
    #expect(container.names("delayed").count == 1)
    #expect(container.names("claimed").isEmpty)
    let second = try #require(try claim(container).first)
    let bad = try run("release", container, ["--retry-after", "0", second.token])
    #expect(bad.status == 64)
    #expect(
      bad.stderr
        == "mailboxctl: error: release: --retry-after needs a number of seconds greater than 0 "
        + "and at most 1000000000, not '0'\nRun 'mailboxctl release --help' for usage.\n")
    #expect(container.names("claimed").count == 1)
    #expect(try run("release", container, [second.token]).status == 0)
    #expect(try claim(container, ["--limit", "5"]).map(\.message) == [2, 3])
    let due = try container.rawMailbox().nextDueDate()
    #expect(try #require(due).timeIntervalSinceNow > 3500)
  }

  /// Found by a new user: a --retry-after ending past the message's lifetime was accepted, and
  /// the message then expired in delayed/ without being delivered again.
  @Test func `Release --retry-after past the lifetime is refused and the claim stands`() throws {
    let container = try TemporaryContainer()
    #expect(
      try run("create", container, ["--message-lifetime", "3600"]).status == 0)
    try enqueue(container, 1)
    let first = try #require(try claim(container).first)
    let held = container.names("claimed")
    let refused = try run("release", container, ["--retry-after", "3601", first.token])
    #expect(refused.status == 65)
    #expect(
      refused.stderr
        == "mailboxctl: error: release: message \(first.id) would expire before it is due "
        + "(the mailbox's message lifetime is 3600 s); it stays claimed (release it with a "
        + "shorter --retry-after, or without one) ('mailboxctl config --message-lifetime "
        + "SECONDS' raises it)\n")
    #expect(container.names("claimed") == held)
    #expect(container.names("delayed").isEmpty)
    // Within the lifetime it waits in delayed/ as usual.
    #expect(try run("release", container, ["--retry-after", "1800", first.token]).status == 0)
    #expect(container.names("delayed").count == 1)
    #expect(container.names("claimed").isEmpty)
  }

  /// Found by a review of the fix above: a keyed replacement keeps the replaced message's place
  /// (the time in its name), and delayed/ expires it by that time, so the check counts from the
  /// earlier of the two; counted from the header's date, a delay it would not outlive passed.
  @Test func `Release --retry-after counts a keyed replacement's lifetime from its place`()
    throws
  {
    let container = try TemporaryContainer()
    #expect(try run("create", container, ["--message-lifetime", "3600"]).status == 0)
    let earlier = FakeClock(start: Date().addingTimeInterval(-1800))
    let first = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", limits: .init(),
      overflowPolicy: .rejectNewest,
      diagnostic: nil, durability: .full, permissions: .private, clock: earlier.mailboxClock)
    _ = try first.enqueue(Data("1".utf8), key: "k", onConflict: .replace)
    _ = try container.rawMailbox().enqueue(Data("2".utf8), key: "k", onConflict: .replace)
    let claimed = try #require(try claim(container).first)
    #expect(claimed.message == 2)
    // Due 2,000 s from now: 3,800 s after its place, 2,000 s after its header's date.
    let refused = try run("release", container, ["--retry-after", "2000", claimed.token])
    #expect(refused.status == 65, "\(refused.stderr)")
    #expect(container.names("delayed").isEmpty)
    #expect(try run("release", container, ["--retry-after", "1000", claimed.token]).status == 0)
    #expect(container.names("delayed").count == 1)
  }

  @Test func `Renew starts a fresh lease and keeps the token`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    let first = try #require(try claim(container, ["--claim-timeout", "60"]).first)
    let name = try #require(container.names("claimed").first)
    let renewed = try run("renew", container, ["--claim-timeout", "3600", "--json", first.token])
    #expect(renewed.status == 0)
    let object = try #require(try jsonLines(renewed.stdout).first)
    #expect(object["token"] as? String == first.token)
    let lease = try #require(ISO8601.parse(object["leaseUntil"] as? String ?? ""))
    #expect(lease.timeIntervalSince(first.leaseUntil) > 3000)
    let renamed = try #require(container.names("claimed").first)
    #expect(renamed != name)
    #expect(renamed.hasPrefix(String(name.dropLast(23))))
    let plain = try run("renew", container, [first.token])
    #expect(plain.status == 0)
    #expect(try #require(ISO8601.parse(String(plain.stdout.dropLast()))) < lease)
    #expect(try run("ack", container, [first.token]).status == 0)
    #expect(container.names("claimed").isEmpty && container.names("pending").isEmpty)
  }

  /// Found by an adversarial review: two uses of one token at once (a keep-alive renew beside
  /// another renew or the ack) raced on the claimed file's rename, and the loser said the claim
  /// no longer existed while it did (an ack so lost left the message to be delivered again).
  @Test func `Concurrent renewals of one token never report the claim gone`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    let first = try #require(try claim(container).first)
    // Three loops of 40 renewals each, at once (threads of this process, each running one
    // renewal process at a time).
    let failures = Locked<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 3) { _ in
      for _ in 0..<40 {
        let renewed = try? Mailboxctl.run(["renew"] + container.arguments() + [first.token])
        if renewed?.status != 0 {
          failures.withLock { $0.append(renewed?.stderr ?? "did not run") }
        }
      }
    }
    #expect(failures.withLock { $0 } == [])
    #expect(try run("ack", container, [first.token]).status == 0)
    #expect(container.names("claimed").isEmpty && container.names("pending").isEmpty)
  }

  @Test(arguments: ["0", "31622401"])
  func `Renew names the claim timeout's own bound, whichever check refuses the value`(
    value: String
  ) throws {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    let first = try #require(try claim(container).first)
    let refused = try run("renew", container, ["--claim-timeout", value, first.token])
    #expect(refused.status == 64)
    #expect(
      refused.stderr
        == "mailboxctl: error: renew: --claim-timeout needs a number of seconds greater than 0 "
        + "and at most 31622400, not '\(value)'\nRun 'mailboxctl renew --help' for usage.\n")
  }

  @Test func `A token whose claim was recovered fails with 66 and leaves the new claim alone`()
    throws
  {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    let old = try #require(try claim(container, ["--claim-timeout", "0.2"]).first)
    #expect(waitUntil(deadline: 30) { Date() > old.leaseUntil.addingTimeInterval(0.05) })
    #expect(try run("maintain", container, []).status == 0)
    let new = try #require(try claim(container).first)
    #expect(new.id == old.id && new.deliveryCount == 2 && new.token != old.token)
    let held = container.names("claimed")
    for (command, options) in [
      ("ack", []), ("release", []), ("release", ["--retry-after", "5"]), ("renew", []),
    ] {
      let result = try run(command, container, options + [old.token])
      #expect(result.status == 66, "\(command)")
      #expect(result.stdout == "")
      #expect(result.stderr == stale(command, old.token))
      #expect(container.names("claimed") == held)
      #expect(container.names("pending").isEmpty && container.names("delayed").isEmpty)
    }
    #expect(try run("ack", container, [new.token]).status == 0)
    #expect(container.names("claimed").isEmpty)
  }

  @Test func `Malformed tokens are refused with 64 before anything is opened`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    let token = try #require(try claim(container).first).token
    let claimedName = try #require(container.names("claimed").first)
    let refused = [
      "", token.uppercased(), String(token.dropLast()), token + "0", token + "/x",
      "../\(token)", "claimed/\(claimedName)", claimedName, String(claimedName.dropLast(6)),
      token.replacingOccurrences(of: ".", with: "/"), token + "\n", " " + token,
      String(token.prefix(36)) + ".+123456789abcdef", "../../../../etc/passwd",
    ]
    for text in refused {
      // An absent namespace: a refused token must not open (or create) anything.
      let result = try Mailboxctl.run(
        ["ack"] + container.arguments(namespace: "absent") + ["--", text])
      #expect(result.status == 64, "\(text)")
      #expect(
        result.stderr
          == "mailboxctl: error: ack: TOKEN is not a claim token (<message id>.<16 hex digits>, "
          + "as 'mailboxctl claim' prints it): '\(Output.shown(text, limit: 80))'\n"
          + "Run 'mailboxctl ack --help' for usage.\n")
    }
    #expect(!FileManager.default.fileExists(atPath: container.area("", namespace: "absent").path))
    #expect(container.names("claimed") == [claimedName])
    #expect(try run("ack", container, [token]).status == 0)
  }

  @Test func `Claim puts back what it could not print, uncounted, and exits 74`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 3)
    let result = try Mailboxctl.runWithoutReader(
      ["claim"] + container.arguments() + ["--limit", "5"])
    #expect(result.status == 74)
    #expect(
      result.stderr
        == "mailboxctl: error: claim: writing stdout failed: Broken pipe (errno 32); 3 of 3 "
        + "claimed messages not printed, put back, their delivery not counted\n")
    #expect(container.names("claimed").isEmpty)
    let again = try claim(container, ["--limit", "5"])
    #expect(again.map(\.message) == [1, 2, 3])
    #expect(again.map(\.deliveryCount) == [1, 1, 1])
  }

  @Test func `Nothing pending prints nothing and exits 0; a missing mailbox exits 66`() throws {
    let container = try TemporaryContainer()
    try enqueue(container, 1)
    #expect(try run("ack", container, [try #require(try claim(container).first).token]).status == 0)
    let empty = try run("claim", container, [])
    #expect(empty.status == 0 && empty.stdout == "" && empty.stderr == "")
    let missing = try Mailboxctl.run(["claim"] + container.arguments(namespace: "absent"))
    #expect(missing.status == 66)
  }
}
