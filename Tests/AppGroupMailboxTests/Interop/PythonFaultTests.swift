import Foundation
import Testing

@testable import AppGroupMailbox

/// Faults adversarial sessions found in the Python implementation (interop/python), each held
/// to what docs/SECURITY.md promises of the Swift library: a write is whole or an error ("Errors
/// under pressure": an error means "not enqueued"), a failure is one line and a documented exit
/// status (agm_spool.py's docstring: 69 opening, 74 I/O), a `state` file that is not a regular
/// file with one link is refused, and a hostile entry is contained, never a crash.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonFaultTests {
  /// A message of 36,010 bytes (its header and a 36,002-byte JSON string). Computed, not a
  /// stored `static let`: LeakSanitizer cannot see a global `Data` through the spare bits Swift
  /// packs into its representation, and reports it as a leak at exit.
  static var bigMessage: Data { Data(("\"" + String(repeating: "x", count: 36_000) + "\"").utf8) }

  /// Runs agm_spool.py under `sh -c 'ulimit -f 16'`: files it writes may not grow past 8,192
  /// bytes (dash counts 512-byte blocks) or 16,384 (bash, 1,024), so write(2) of the message
  /// returns a short count and the next one fails with EFBIG (Python ignores SIGXFSZ).
  static func enqueueUnderFileSizeLimit(_ container: TemporaryContainer, _ stdin: Data) throws
    -> Finished
  {
    try Processes.start(
      URL(fileURLWithPath: "/bin/sh"),
      [
        "-c", "ulimit -f 16 && exec \"$0\" \"$@\"", PythonSpool.python.path,
        PythonSpool.script.path, "enqueue", container.url.path, "jobs",
      ], stdin: stdin
    ).finish()
  }

  /// The namespace directory's path and an entry in it.
  static func namespacePath(_ container: TemporaryContainer, _ entry: String) -> String {
    container.url.appendingPathComponent("AppGroupMailbox/jobs/\(entry)").path
  }

  @Test func `A short write fails the Python enqueue and publishes nothing`() throws {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)  // the mailbox, made without a limit
    _ = try PythonSpool.run("drain", container)
    let failed = try Self.enqueueUnderFileSizeLimit(container, Self.bigMessage)
    #expect(failed.status == 74, "stderr: \(failed.stderr)")
    #expect(failed.stdout == "")
    #expect(failed.stderr == "agm_spool: error: enqueue: File too large (errno 27)\n")
    #expect(container.names("pending") == [])
    #expect(container.names("tmp") == [])
    // The mailbox still works: the same message enqueued without the limit arrives whole.
    let published = try PythonSpool.run("enqueue", container, stdin: Self.bigMessage)
    #expect(published.lines.count == 1)
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload.utf8.count) == [36_002])
    #expect(container.names("quarantine") == [])
  }

  @Test func `A FIFO as the state file is refused with exit 69 and one line, no traceback`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)
    let state = Self.namespacePath(container, "state")
    try FileManager.default.removeItem(atPath: state)
    #expect(mkfifo(state, 0o600) == 0)
    for command in ["enqueue", "drain"] {
      let refused = try PythonSpool.start(command, container, stdin: Data("2".utf8)).finish()
      #expect(refused.status == 69, "\(command): \(refused.stderr)")
      #expect(refused.stdout == "")
      #expect(refused.stderr == "agm_spool: error: open: Invalid argument (errno 22)\n")
    }
    #expect(container.names("pending").count == 1)
  }

  @Test func `A hard-linked state file is refused, never written through`() throws {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)
    let outside = container.url.appendingPathComponent("outside").path
    try Data("outside\n".utf8).write(to: URL(fileURLWithPath: outside))
    let state = Self.namespacePath(container, "state")
    try FileManager.default.removeItem(atPath: state)
    #expect(link(outside, state) == 0)
    let refused = try PythonSpool.start("enqueue", container, stdin: Data("2".utf8)).finish()
    #expect(refused.status == 69, "stderr: \(refused.stderr)")
    #expect(refused.stderr == "agm_spool: error: open: Invalid argument (errno 22)\n")
    #expect(try String(contentsOfFile: outside, encoding: .utf8) == "outside\n")
    #expect(container.names("pending").count == 1)
  }

  @Test func `A symlink as the settings file is refused with exit 69 and one line`() throws {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)
    let settings = Self.namespacePath(container, "settings")
    let moved = container.url.appendingPathComponent("settings").path
    try FileManager.default.moveItem(atPath: settings, toPath: moved)
    try FileManager.default.createSymbolicLink(atPath: settings, withDestinationPath: moved)
    let refused = try PythonSpool.start("drain", container).finish()
    #expect(refused.status == 69, "stderr: \(refused.stderr)")
    #expect(refused.stdout == "")
    #expect(
      refused.stderr == "agm_spool: error: open: Too many levels of symbolic links (errno 40)\n")
    #expect(container.names("pending").count == 1)
  }

  /// Expired names (enqueued 2023-11-14) in each area a consumer expires from.
  static let expiredNames = [
    (
      "delayed",
      "1700000000000000-1700000000000000-00000000000000000009-11111111-2222-4333-8444-555555555555-0.msg"
    ),
    (
      "claimed",
      "1700000000000000-00000000000000000009-11111111-2222-4333-8444-555555555555-1.aaaaaaaaaaaaaaaa.1700000000000000.claim"
    ),
    ("pending", "1700000000000000-00000000000000000009-11111111-2222-4333-8444-555555555555-0.msg"),
  ]

  @Test(arguments: expiredNames)
  func `A directory under an expired name is quarantined as unsafe by a Python drain`(
    area: String, name: String
  ) throws {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container)
    try FileManager.default.createDirectory(
      at: container.area(area).appendingPathComponent(name), withIntermediateDirectories: false)
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload) == ["1"])
    #expect(container.names(area) == [])
    let quarantined = container.names("quarantine")
    #expect(quarantined.count == 1)
    // <micros:16>-unsafe-<id>-<tag:8>.q
    #expect(
      quarantined.map { String($0.dropFirst(17).dropLast(11)) }
        == ["unsafe-11111111-2222-4333-8444-555555555555"])
  }

  @Test func `A Python trim removes a directory tree 1,200 levels deep, not a RecursionError`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container, ["--max-quarantined", "1"])
    // Under a foreign name in quarantine/, which trim deletes first; a file and a link to a
    // directory outside at every level.
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: false)
    try Data("keep".utf8).write(to: outside.appendingPathComponent("target"))
    var level = open(container.area("quarantine").path, O_RDONLY | O_DIRECTORY)
    try #require(level >= 0)
    for _ in 0..<1_200 {
      try #require(mkdirat(level, "d", 0o700) == 0)
      let file = openat(level, "f", O_WRONLY | O_CREAT | O_EXCL, 0o600)
      try #require(file >= 0)
      close(file)
      try #require(symlinkat(outside.path, level, "l") == 0)
      let next = openat(level, "d", O_RDONLY | O_DIRECTORY)
      close(level)
      level = next
      try #require(level >= 0)
    }
    close(level)
    // An expired directory in delayed/: the drain quarantines it, trimming quarantine first.
    let (area, name) = Self.expiredNames[0]
    try FileManager.default.createDirectory(
      at: container.area(area).appendingPathComponent(name), withIntermediateDirectories: false)
    let drained = try PythonSpool.start("drain", container).finish()
    #expect(drained.status == 0, "stderr: \(drained.stderr)")
    #expect(drained.stderr == "")
    #expect(try PythonSpool.delivered(drained).map(\.payload) == ["1"])
    #expect(container.names("quarantine").map { $0.contains("-unsafe-") } == [true])
    #expect(
      try String(contentsOf: outside.appendingPathComponent("target"), encoding: .utf8) == "keep")
  }

  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
  func `A Python trim passes over an entry it cannot delete and deletes the next in its stead`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container, ["--max-quarantined", "2"])
    // Foreign names, which trim deletes first, in byte order; "a" is immutable (chattr(1)).
    for name in ["a", "b", "c"] {
      try Data(name.utf8).write(to: container.area("quarantine").appendingPathComponent(name))
    }
    let stuck = container.area("quarantine").appendingPathComponent("a").path
    let locked = try Processes.run("/usr/bin/chattr", ["+i", stuck])
    try #require(locked.status == 0, "chattr +i failed: \(locked.stderr)")
    // Before the container (kept alive until then) removes its directory.
    defer {
      withExtendedLifetime(container) { _ = try? Processes.run("/usr/bin/chattr", ["-i", stuck]) }
    }
    let (area, name) = Self.expiredNames[0]
    try FileManager.default.createDirectory(
      at: container.area(area).appendingPathComponent(name), withIntermediateDirectories: false)
    let drained = try PythonSpool.start("drain", container).finish()
    #expect(drained.status == 0, "stderr: \(drained.stderr)")
    #expect(try PythonSpool.delivered(drained).map(\.payload) == ["1"])
    let kept = container.names("quarantine")
    #expect(kept.count == 2)
    #expect(kept.contains("a"))
    #expect(kept.filter { $0.contains("-unsafe-") }.count == 1)
  }

  @Test(
    .enabled(
      if: isRoot || isCI,
      "needs root to give a directory to another user, and runuser (under CI=true it must work)"
    ))
  func `Another user's read-only directory under a due name is skipped, not a crash`() throws {
    let container = try TemporaryContainer()
    // The container is the unprivileged consumer's (nobody); the hostile entries are daemon's.
    #expect(chown(container.url.path, 65_534, 65_534) == 0)
    func python(_ command: String, stdin: Data = Data()) throws -> Finished {
      try Processes.start(
        URL(fileURLWithPath: "/usr/sbin/runuser"),
        [
          "-u", "nobody", "--", PythonSpool.python.path, PythonSpool.script.path, command,
          container.url.path, "jobs",
        ], stdin: stdin
      ).finish()
    }
    #expect(try python("enqueue", stdin: Data("1".utf8)).status == 0)
    let micros = Int64(Date().timeIntervalSince1970 * 1_000_000) - 1_000_000
    let digits = String(format: "%016lld", micros)
    let id = "11111111-2222-4333-8444-555555555555"
    // Due a second ago, and a lease that ran out a second ago.
    let entries = [
      ("delayed", "\(digits)-\(digits)-00000000000000000009-\(id)-0.msg"),
      ("claimed", "\(digits)-00000000000000000008-\(id)-1.aaaaaaaaaaaaaaaa.\(digits).claim"),
    ]
    for (area, name) in entries {
      let directory = container.area(area).appendingPathComponent(name)
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
      try Data().write(to: directory.appendingPathComponent("inside"))
      #expect(chown(directory.path, 1, 1) == 0)
      #expect(chown(directory.appendingPathComponent("inside").path, 1, 1) == 0)
      #expect(chmod(directory.path, 0o555) == 0)
    }
    let drained = try python("drain")
    #expect(drained.status == 0, "stderr: \(drained.stderr)")
    #expect(drained.stderr == "")
    #expect(try PythonSpool.delivered(drained).map(\.payload) == ["1"])
    #expect(container.names("delayed") == [entries[0].1])
    #expect(container.names("claimed") == [entries[1].1])
    #expect(container.names("pending") == [])
    #expect(container.names("quarantine") == [])
  }

  @Test func `A group-shared namespace directory keeps files 0660 under a 'private' settings file`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try PythonSpool.enqueue(["1"], into: container, ["--group-shared"])
    let settings = URL(fileURLWithPath: Self.namespacePath(container, "settings"))
    let text = try String(contentsOf: settings, encoding: .utf8)
    #expect(text.contains("\"sharing\":\"groupShared\""))
    // A hostile group member rewrites it: every opener would then create files 0600.
    try FileManager.default.removeItem(at: settings)
    let rewritten = text.replacingOccurrences(
      of: "\"sharing\":\"groupShared\"", with: "\"sharing\":\"private\"")
    #expect(
      FileManager.default.createFile(
        atPath: settings.path, contents: Data(rewritten.utf8),
        attributes: [.posixPermissions: 0o660]))
    _ = try PythonSpool.run("drain", container)
    _ = try PythonSpool.enqueue(["2"], into: container)
    let pending = container.names("pending")
    #expect(pending.count == 1)
    let mode = try #require(
      try FileManager.default.attributesOfItem(
        atPath: container.area("pending").appendingPathComponent(pending[0]).path)[
          .posixPermissions]
        as? Int)
    #expect(mode == 0o660)
  }

  @Test func `An invalid namespace, limit or id is a usage error without a traceback`() throws {
    let container = try TemporaryContainer()
    let cases: [(namespace: String, arguments: [String], reason: String)] = [
      ("bad/ns", [], "invalid namespace"),
      ("jobs", ["--max-messages", "-3"], "invalid limit: 'maxMessages' is out of range"),
      ("jobs", ["--lifetime", "nan"], "invalid limit: 'messageLifetime' is out of range"),
      ("jobs", ["--id", "not-a-uuid"], "--id needs a UUID"),
    ]
    for (namespace, arguments, reason) in cases {
      let refused = try Processes.start(
        PythonSpool.python,
        [PythonSpool.script.path, "enqueue", container.url.path, namespace] + arguments,
        stdin: Data("1".utf8)
      ).finish()
      #expect(refused.status == 2, "\(namespace) \(arguments): \(refused.stderr)")
      #expect(refused.stdout == "")
      #expect(refused.stderr.hasPrefix("usage: agm_spool.py"))
      #expect(refused.stderr.hasSuffix("agm_spool.py: error: \(reason)\n"))
      #expect(!refused.stderr.contains("Traceback"))
    }
    #expect(!FileManager.default.fileExists(atPath: Self.namespacePath(container, "")))
  }
}
