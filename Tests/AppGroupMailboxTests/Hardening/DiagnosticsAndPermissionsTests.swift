import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// Points 8 and 9 of issue 3: content-free diagnostics delivered outside every lock, and explicit
/// file modes whatever the umask.
@Suite struct DiagnosticsAndPermissionsTests {
  @Test func `A diagnostic handler that calls back into the mailbox does not deadlock`() throws {
    let container = try TemporaryContainer()
    let clock = FakeClock()
    let box = Locked<AppGroupMailbox<String>?>(nil)
    let seen = Locked<[AppGroupMailboxDiagnostic]>([])
    let reentered = Locked<[String]>([])
    let sink: @Sendable (AppGroupMailboxDiagnostic) -> Void = { event in
      seen.withLock { $0.append(event) }
      guard let mailbox = box.withLock({ $0 }) else { return }
      // Re-enter every kind of operation, once per event kind.
      if event == .malformedMessageQuarantined {
        do {
          try mailbox.enqueue("from handler")
          try mailbox.performMaintenance()
          let claims = try mailbox.claimPending(limit: 1)
          reentered.withLock { $0 += claims.map(\.message) }
          for claim in claims { try claim.release() }
        } catch {
          reentered.withLock { $0.append("error \(error)") }
        }
      }
    }
    let mailbox = try AppGroupMailbox<String>(
      containerURL: container.url, namespace: "jobs", limits: .init(maxMessages: 2),
      overflowPolicy: .discardOldest, notificationName: nil, messageType: nil, diagnostic: sink,
      durability: .full, permissions: .private, clock: clock.mailboxClock)
    box.withLock { $0 = mailbox }
    try container.plant("pending", pendingName(micros: micros(clock) - 1, sequence: 1), [])
    let returned = finishes(within: 30) {
      _ = try? mailbox.claimPending(limit: 1)
      _ = try? mailbox.enqueue("one")
      _ = try? mailbox.enqueue("two")  // full: discards "from handler", reporting outside the lock
    }
    #expect(returned, "the mailbox deadlocked on a re-entrant diagnostic handler")
    #expect(reentered.withLock { $0 } == ["from handler"])
    #expect(seen.withLock { $0 } == [.malformedMessageQuarantined, .oldestMessageDiscarded])
    #expect(try mailbox.claimPending().map(\.message) == ["one", "two"])
  }

  @Test func `No message bytes reach a diagnostic, an error or the log of a draining process`()
    throws
  {
    let container = try TemporaryContainer()
    let clock = FakeClock(start: Date())
    let recorder = DiagnosticRecorder()
    let outside = container.url.appendingPathComponent("outside")
    try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    try Data("\(secretMarker) secret\n".utf8).write(
      to: outside.appendingPathComponent("secret.txt"))
    try Data("{}".utf8).write(to: outside.appendingPathComponent("valid.msg"))
    let mailbox: AppGroupMailbox<Note> = try container.mailbox(
      Note.self, limits: .init(maxPayloadBytes: 4096), clock: clock, diagnostics: recorder)
    let front = micros(clock) - 60_000_000
    for (index, kind) in HostileEntryTests.kinds.enumerated() {
      let id = UUID()
      _ = try HostileEntryTests.plantHostile(
        kind, in: container, name: pendingName(micros: front, sequence: UInt64(index + 1), id: id),
        id: id, micros: front, outside: outside)
    }
    try container.plant("pending", "\(secretMarker).txt", Array(secretMarker.utf8))
    var errors: [any Error] = []
    do {
      try mailbox.enqueue(Note(text: secretMarker + String(repeating: "z", count: 5000)))
    } catch {
      errors.append(error)
    }
    _ = FaultInjection.withRules([.init(call: "write", errno: EIO)]) {
      do { try mailbox.enqueue(Note(text: secretMarker)) } catch { errors.append(error) }
    }
    // A second process drains a copy of the same hostile spool and logs everything it sees.
    let second = try TemporaryContainer()
    try FileManager.default.createDirectory(
      at: second.area("pending"), withIntermediateDirectories: true)
    for name in container.names("pending") where !name.contains(secretMarker) {
      let from = container.path("pending", name)
      var info = stat()
      guard lstat(from, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1 else {
        continue
      }
      try FileManager.default.copyItem(atPath: from, toPath: second.path("pending", name))
    }
    try second.plant("pending", "\(secretMarker).msg", Array(secretMarker.utf8))
    let log = try Processes.runWorker(["drain-report", second.url.path, "jobs"])
    #expect(log.status == 0)
    #expect(log.stderr.contains("diagnostic: "))

    let claims = try mailbox.claimPending()
    #expect(claims.isEmpty)
    #expect(recorder.all.count >= HostileEntryTests.kinds.count)
    #expect(errors.count == 2)
    let texts =
      recorder.all.map { "\($0) \(String(reflecting: $0))" }
      + errors.map { "\($0) \(String(reflecting: $0)) \($0.localizedDescription)" }
      + [log.stdout, log.stderr]
    for text in texts { #expect(!text.contains(secretMarker), "leaked: \(text)") }
  }

  /// Modes below the container for a mailbox opened under `mask` with `permissions`.
  static func modes(mask: String, permissions: String) throws -> [String: mode_t] {
    let container = try TemporaryContainer()
    let root = container.url.appendingPathComponent("made-by-mailbox")
    let result = try Processes.runWorker(["umask-open", root.path, "jobs", mask, permissions])
    #expect(result.status == 0, "\(result.stderr)")
    var modes: [String: mode_t] = [:]
    let namespace = root.path + "/AppGroupMailbox/jobs"
    var paths = [
      "container": root.path, "root": root.path + "/AppGroupMailbox", "namespace": namespace,
      "state": namespace + "/state",
    ]
    for area in SpoolDirectories.areas { paths[area] = namespace + "/" + area }
    let pending = try FileManager.default.contentsOfDirectory(atPath: namespace + "/pending")
    paths["message"] = namespace + "/pending/" + (pending.first ?? "missing")
    for (key, path) in paths {
      var info = stat()
      #expect(lstat(path, &info) == 0, "\(path)")
      modes[key] = info.st_mode & 0o7777
    }
    return modes
  }

  @Test(arguments: ["000", "022", "077", "777"])
  func `Private mailboxes get 0700 directories and 0600 files whatever the umask`(mask: String)
    throws
  {
    let modes = try Self.modes(mask: mask, permissions: "private")
    for directory in ["container", "root", "namespace", "tmp", "pending", "claimed", "quarantine"] {
      #expect(modes[directory] == 0o700, "\(directory)")
    }
    #expect(modes["state"] == 0o600)
    #expect(modes["message"] == 0o600)
  }

  @Test(arguments: ["000", "022", "077", "777"])
  func `Group-shared mailboxes get setgid 02770 directories and 0660 files whatever the umask`(
    mask: String
  ) throws {
    let modes = try Self.modes(mask: mask, permissions: "group")
    for directory in ["container", "root", "namespace", "tmp", "pending", "claimed", "quarantine"] {
      #expect(modes[directory] == 0o2770, "\(directory)")
    }
    #expect(modes["state"] == 0o660)
    #expect(modes["message"] == 0o660)
  }
}
