import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Points 3 (directories) and 7 of issue 3 and case C14: namespaces never leave the container,
/// names never exceed NAME_MAX, and the mailbox refuses symlinked or split directories.
@Suite struct NamespaceAndContainerTests {
  static let invalidNamespaces = [
    "../escape", "a/b", ".", "..", "...", "", "a\u{0}b", String(repeating: "a", count: 65),
    String(repeating: "b", count: 300), "café", "名前", "jobs ", "tab\there", "/abs", "a\\b",
    "ＡＢＣ", "-", "--lines", "-x",
  ]

  @Test(arguments: invalidNamespaces)
  func `An invalid namespace is refused before anything is created (C14)`(namespace: String) throws
  {
    let container = try TemporaryContainer()
    let target = container.url.appendingPathComponent("box")
    #expect(throws: AppGroupMailboxError.invalidNamespace) {
      _ = try AppGroupMailbox<String>(containerURL: target, namespace: namespace)
    }
    #expect(!AppGroupMailboxNamespace.isValid(namespace))
    // Nothing inside the container, nothing beside it.
    #expect(!FileManager.default.fileExists(atPath: target.path))
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
  }

  @Test func `An invalid namespace through an app group identifier creates nothing either`() throws
  {
    let container = try TemporaryContainer()
    #expect(throws: AppGroupMailboxError.invalidNamespace) {
      _ = try AppGroupMailbox<String>(appGroupIdentifier: "group.example", namespace: "../x")
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
  }

  @Test(arguments: [
    String(repeating: "a", count: 64), "a.b-c_D", ".hidden", "x-", "_", "9", "..a", "a..",
  ])
  func `A valid namespace opens a directory of exactly that name inside the container`(
    namespace: String
  ) throws {
    let container = try TemporaryContainer()
    let mailbox = try AppGroupMailbox<String>(containerURL: container.url, namespace: namespace)
    #expect(AppGroupMailboxNamespace.isValid(namespace))
    #expect(mailbox.directoryURL.path == container.url.path + "/AppGroupMailbox/" + namespace)
    #expect(
      try FileManager.default.contentsOfDirectory(
        atPath: container.url.appendingPathComponent("AppGroupMailbox").path) == [namespace])
  }

  @Test func `Names that differ only in case are two namespaces`() throws {
    let container = try TemporaryContainer()
    let upper = try AppGroupMailbox<String>(containerURL: container.url, namespace: "Jobs")
    let lower = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    try upper.enqueue("upper")
    try lower.enqueue("lower")
    #expect(try upper.claimPending().map(\.message) == ["upper"])
    #expect(try lower.claimPending().map(\.message) == ["lower"])
    #expect(
      try FileManager.default.contentsOfDirectory(
        atPath: container.url.appendingPathComponent("AppGroupMailbox").path
      ).sorted() == ["Jobs", "jobs"])
  }

  @Test func `No accepted namespace, id, sequence or count makes a name longer than NAME_MAX`()
    throws
  {
    let id = UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!
    let key = MessageKey(micros: MessageKey.maxMicros, sequence: UInt64.max)
    let pending = PendingName(key: key, id: id, attempts: PendingName.maxAttempts)
    let claimed = ClaimedName(message: pending, token: UInt64.max, leaseUntilMicros: Int64.max)
    let temporary = "\(Int32.max)-\(String(UInt64.max, radix: 16)).tmp"
    var names = [
      pending.fileName, claimed.fileName, temporary,
      String(repeating: "n", count: NamespaceRule.maxBytes),
    ]
    names += SpoolDirectories.areas + [SpoolDirectories.root, "state"]
    for reason in QuarantineReason.allCases {
      names.append(
        QuarantineName(micros: MessageKey.maxMicros, reason: reason, id: id, nonce: .max).fileName)
      names.append(
        QuarantineName(micros: MessageKey.maxMicros, reason: reason, id: nil, nonce: .max).fileName)
    }
    #expect(names.map(\.utf8.count).max()! <= Int(NAME_MAX))
    #expect(pending.fileName.utf8.count == 89)
    #expect(claimed.fileName.utf8.count == 125)
    #expect(PendingName(parsing: pending.fileName) == pending)
    #expect(ClaimedName(parsing: claimed.fileName) == claimed)
  }

  /// Makes `relative` (below the container) a symlink to a fresh directory outside; returns it.
  static func symlinkOut(_ container: TemporaryContainer, _ relative: String) throws -> URL {
    let target = container.url.appendingPathComponent("elsewhere-\(UUID().uuidString.prefix(6))")
    try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
    let path = container.url.appendingPathComponent(relative).path
    try? FileManager.default.removeItem(atPath: path)
    #expect(symlink(target.path, path) == 0)
    return target
  }

  @Test(arguments: [
    "AppGroupMailbox", "AppGroupMailbox/jobs", "AppGroupMailbox/jobs/tmp",
    "AppGroupMailbox/jobs/pending", "AppGroupMailbox/jobs/claimed",
    "AppGroupMailbox/jobs/quarantine", "AppGroupMailbox/jobs/state",
  ])
  func `A mailbox directory or state file that is a symlink is refused with containerUnavailable`(
    relative: String
  ) throws {
    let container = try TemporaryContainer()
    _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    let target = try Self.symlinkOut(container, relative)
    let error = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    }
    let roles = [
      "AppGroupMailbox": "mailboxes directory", "AppGroupMailbox/jobs": "namespace directory",
      "AppGroupMailbox/jobs/state": "state file",
    ]
    let role = roles[relative] ?? "\(relative.split(separator: "/").last ?? "") area"
    // O_NOFOLLOW refuses a symlink with ELOOP, or with ENOTDIR when O_DIRECTORY asks for a
    // directory (open(2)).
    let code = relative.hasSuffix("state") ? ELOOP : ENOTDIR
    #expect(
      error?.containerUnavailableCause
        == .init(operation: "open mailbox", systemCall: "openat", errno: code, role: role))
    #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == [])
  }

  @Test func `A symlinked namespace is refused even before the mailbox ever existed`() throws {
    let container = try TemporaryContainer()
    try FileManager.default.createDirectory(
      at: container.url.appendingPathComponent("AppGroupMailbox"), withIntermediateDirectories: true
    )
    let target = try Self.symlinkOut(container, "AppGroupMailbox/jobs")
    #expect(throws: AppGroupMailboxError.containerUnavailable) {
      _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == [])
  }

  @Test(mountsTmpfs) func `An area on another filesystem is refused with containerUnavailable`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    let pending = container.area("pending").path
    try mountTmpfs(pending, size: "1m")
    defer { unmount(pending) }
    let error = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    }
    #expect(
      error?.containerUnavailableCause
        == .init(
          operation: "open mailbox", systemCall: "", errno: EXDEV, role: "pending area"))
  }
}
