import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Entries a member of a group-shared mailbox can plant that the others can neither move nor
/// delete, and the files around them (from an adversarial session with several Unix users): a
/// hostile entry never stops the operation that meets it, never blocks an open, and never locks
/// the other members out.
@Suite struct ImmovableEntryTests {
  /// A user and a group no other test uses (no passwd entry needed), and a second user who owns
  /// the planted entries.
  static let (user, owner, group) = ("60431", "60432", "60430")

  /// A delayed name for a message of `micros` due at `dueMicros`.
  func delayedName(dueMicros: Int64, micros: Int64, sequence: UInt64) -> String {
    DelayedName(
      dueMicros: dueMicros,
      message: PendingName(
        key: MessageKey(micros: micros, sequence: sequence), id: UUID(), attempts: 0)
    ).fileName
  }

  @Test func `An expired directory in delayed/ is quarantined and the messages are delivered`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for value in 1...2 { try mailbox.enqueue(Data("\(value)".utf8)) }
    let name = delayedName(
      dueMicros: 1_700_000_000_000_000, micros: 1_700_000_000_000_000, sequence: 9)
    #expect(mkdir(container.path("delayed", name), 0o700) == 0)
    let claims = try mailbox.claimPending()
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["1", "2"])
    #expect(container.quarantineReasons() == ["unsafe"])
    #expect(container.names("delayed") == [])
    try mailbox.performMaintenance()
  }

  @Test func `A claim that fails midway returns the messages it claimed`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for value in 1...10 { try mailbox.enqueue(Data("\(value)".utf8)) }
    let (claims, unfired) = try FaultInjection.withRules([
      // The fourth rename into claimed/ finds the disk full.
      .init(call: "renameat2", errno: ENOSPC, skip: 3)
    ]) { try mailbox.claimPending(limit: 8) }
    #expect(unfired.isEmpty)
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["1", "2", "3"])
    #expect(container.names("claimed").count == 3)
    let rest = try mailbox.claimPending()
    #expect(rest.map { String(decoding: $0.payload, as: UTF8.self) } == (4...10).map(String.init))
  }

  @Test func `A claim whose recount fails after it claimed returns the claims all the same`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for value in 1...5 { try mailbox.enqueue(Data("\(value)".utf8)) }
    let junk = container.area("pending").appendingPathComponent("junk").path
    #expect(FileManager.default.createFile(atPath: junk, contents: Data("x".utf8)))
    let (claims, _) = try FaultInjection.withRules([
      // The first rename quarantines the junk (so a recount follows), the second claims
      // message 1; then the descriptor table is full for good: message 2, renamed, cannot be
      // opened (it is put back), and the recount's listing fails too.
      .init(
        call: "renameat2", errno: 0, skip: 2,
        action: { FaultInjection.addToScope(.init(call: "openat", errno: EMFILE, count: .max)) })
    ]) { try mailbox.claimPending(limit: 4) }
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["1"])
    #expect(container.names("claimed").count == 1)
    #expect(container.names("pending").count == 4)
  }

  @Test func `A FIFO or a hard link as state is refused at once by readers and writers`() throws {
    let container = try TemporaryContainer()
    try container.rawMailbox().enqueue(Data("1".utf8))
    let state = container.url.appendingPathComponent("AppGroupMailbox/jobs/state").path
    #expect(unlink(state) == 0)
    #expect(mkfifo(state, 0o600) == 0)
    for command in [["status"], ["list"], ["enqueue", "--data", "2"], ["drain"]] {
      let result = try Processes.start(
        Mailboxctl.url, [command[0]] + container.arguments() + command.dropFirst()
      ).finish(deadline: 60)
      #expect(result.status == 69, "\(command): \(result.stderr)")
      #expect(
        result.stderr.contains("the state file was refused"), "\(command): \(result.stderr)")
    }
    #expect(unlink(state) == 0)
    let elsewhere = container.url.appendingPathComponent("other").path
    #expect(FileManager.default.createFile(atPath: elsewhere, contents: Data("x".utf8)))
    #expect(link(elsewhere, state) == 0)
    let linked = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "3"])
    #expect(linked.status == 69, "\(linked.stderr)")
    #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == "x")
  }

  @Test func `A settings file rewritten to private leaves a group-shared mailbox group-shared`()
    throws
  {
    let container = try TemporaryContainer()
    let created = try AppGroupRawMailbox(
      containerURL: container.url, namespace: "jobs", permissions: .groupShared)
    try created.enqueue(Data("1".utf8))
    let settings = container.url.appendingPathComponent("AppGroupMailbox/jobs/settings")
    let text = try String(contentsOf: settings, encoding: .utf8)
    #expect(text.contains("\"sharing\":\"groupShared\""))
    try text.replacingOccurrences(of: "groupShared", with: "private")
      .write(to: settings, atomically: false, encoding: .utf8)
    let opened = try container.rawMailbox()
    try opened.enqueue(Data("2".utf8))
    #expect(opened.settings.permissions == .groupShared)
    for name in container.names("pending") {
      var info = stat()
      #expect(lstat(container.path("pending", name), &info) == 0)
      #expect(info.st_mode & 0o777 == 0o660, "\(name)")
    }
  }

  @Test func `Near the descriptor limit a watcher fails with an error, never a trap`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    for limit in 4...17 {
      for command in ["status", "watch", "events"] {
        // Under AddressSanitizer, no leak check at exit: LeakSanitizer's own report needs
        // descriptors this process is kept short of (a CI run at 15 outlived its deadline).
        let sanitizer = ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":" } ?? ""
        let process = try Processes.start(
          URL(fileURLWithPath: "/bin/sh"),
          [
            "-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", Mailboxctl.url.path, command,
            "--container", container.url.path, "--namespace", "jobs",
          ], environment: ["ASAN_OPTIONS": sanitizer + "detect_leaks=0"])
        // It fails at once, or it follows the mailbox: then it is stopped.
        _ = waitUntil(deadline: 10) { !process.process.isRunning }
        if process.process.isRunning { process.signal(SIGTERM) }
        let result = try process.finish(deadline: 60)
        #expect(
          result.reason == .exit, "\(command) at \(limit) descriptors: \(result.stderr)")
      }
    }
  }
}

/// The same with real users: entries owned by another member that this one may not move.
@Suite(.enabled(if: isRoot || isCI, "needs root: plants entries as another user"))
struct ImmovableEntryUserTests {
  /// Runs `mailboxctl arguments` as the mailbox's user.
  func run(_ arguments: [String]) throws -> Finished {
    try Processes.start(
      URL(fileURLWithPath: "/usr/bin/setpriv"),
      [
        "--reuid=\(ImmovableEntryTests.user)", "--regid=\(ImmovableEntryTests.group)",
        "--clear-groups", Mailboxctl.url.path,
      ] + arguments
    ).finish(deadline: 60)
  }

  /// Makes a read-only directory with a file in it, owned by the other user, under `name` in
  /// `area`: the mailbox's user can neither move it to another area nor empty it.
  func plantImmovable(_ container: TemporaryContainer, _ area: String, _ name: String) throws {
    let path = container.path(area, name)
    #expect(mkdir(path, 0o755) == 0)
    #expect(FileManager.default.createFile(atPath: path + "/inside", contents: nil))
    let owner = uid_t(ImmovableEntryTests.owner) ?? 0
    let group = gid_t(ImmovableEntryTests.group) ?? 0
    #expect(chown(path + "/inside", owner, group) == 0)
    #expect(chown(path, owner, group) == 0)
    #expect(chmod(path, 0o555) == 0)
  }

  @Test func `A directory another member keeps read-only never stops delivery`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let uid = uid_t(ImmovableEntryTests.user) ?? 0
    let gid = gid_t(ImmovableEntryTests.group) ?? 0
    #expect(chown(container.url.path, uid, gid) == 0)
    for path in ["", "/jobs", "/jobs/tmp", "/jobs/pending", "/jobs/claimed", "/jobs/delayed"]
      + ["/jobs/quarantine", "/jobs/state", "/jobs/settings"]
    {
      #expect(chown(container.url.path + "/AppGroupMailbox" + path, uid, gid) == 0, "\(path)")
    }
    for value in 1...2 {
      let stored = try run(["enqueue"] + container.arguments() + ["--data", "\(value)"])
      #expect(stored.status == 0, "\(stored.stderr)")
    }
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let tests = ImmovableEntryTests()
    let longAgo: Int64 = 1_700_000_000_000_000
    try plantImmovable(
      container, "delayed", tests.delayedName(dueMicros: now - 1, micros: now - 1, sequence: 90))
    try plantImmovable(
      container, "delayed", tests.delayedName(dueMicros: longAgo, micros: longAgo, sequence: 91))
    let message = PendingName(
      key: MessageKey(micros: now - 1, sequence: 92), id: UUID(), attempts: 1)
    try plantImmovable(
      container, "claimed",
      ClaimedName(message: message, token: 7, leaseUntilMicros: now - 1).fileName)
    try plantImmovable(container, "pending", pendingName(micros: now - 1, sequence: 93))
    let drained = try run(["drain"] + container.arguments())
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(try jsonLines(drained.stdout).map { $0["message"] as? Int } == [1, 2])
    #expect(
      drained.stderr.components(separatedBy: "can be neither moved, quarantined nor removed").count
        == 2,
      "\(drained.stderr)")
    let maintained = try run(["maintain"] + container.arguments())
    #expect(maintained.status == 0, "\(maintained.stderr)")
    let stored = try run(["enqueue"] + container.arguments() + ["--data", "3"])
    #expect(stored.status == 0, "\(stored.stderr)")
    let again = try run(["drain"] + container.arguments())
    #expect(again.status == 0, "\(again.stderr)")
    #expect(try jsonLines(again.stdout).map { $0["message"] as? Int } == [3])
  }
}
