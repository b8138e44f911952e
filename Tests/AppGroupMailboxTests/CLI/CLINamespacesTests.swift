import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The namespaces of a container: `AppGroupMailboxNamespace.all(inContainer:)` and
/// `mailboxctl namespaces` (there was no way to find the mailboxes of a container but `ls`).
@Suite struct CLINamespacesTests {
  @Test func `The listing holds the namespace directories only, in byte order`() throws {
    let container = try TemporaryContainer()
    #expect(try AppGroupMailboxNamespace.all(inContainer: container.url) == [])
    for name in ["b", "a.1", "A"] { _ = try container.rawMailbox(namespace: name) }
    let notifying = try AppGroupMailbox<String>(
      containerURL: container.url, namespace: "c", notificationName: "wake")
    try notifying.enqueue("posts a notification")
    let root = container.url.appendingPathComponent("AppGroupMailbox")
    try FileManager.default.createSymbolicLink(
      atPath: root.appendingPathComponent("link").path, withDestinationPath: container.url.path)
    #expect(
      FileManager.default.createFile(
        atPath: root.appendingPathComponent("file").path, contents: nil))
    try FileManager.default.createDirectory(
      at: root.appendingPathComponent("-x"), withIntermediateDirectories: false)
    #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("@notify").path))
    #expect(try AppGroupMailboxNamespace.all(inContainer: container.url) == ["A", "a.1", "b", "c"])
  }

  @Test func `A container that cannot be listed throws containerUnavailable with its cause`()
    throws
  {
    let container = try TemporaryContainer()
    let missing = container.url.appendingPathComponent("nothing")
    let gone = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      try AppGroupMailboxNamespace.all(inContainer: missing)
    }
    #expect(
      gone?.containerUnavailableCause
        == .init(
          operation: "list namespaces", systemCall: "openat", errno: ENOENT, role: "container"))
    #expect(
      FileManager.default.createFile(
        atPath: container.url.appendingPathComponent("AppGroupMailbox").path, contents: nil))
    let file = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      try AppGroupMailboxNamespace.all(inContainer: container.url)
    }
    #expect(
      file?.containerUnavailableCause
        == .init(
          operation: "list namespaces", systemCall: "openat", errno: ENOTDIR,
          role: "mailboxes directory"))
  }

  @Test func `mailboxctl namespaces prints each mailbox's counts, in text and JSON`() throws {
    let container = try TemporaryContainer()
    let location = ["--container", container.url.path]
    let empty = try Mailboxctl.run(["namespaces"] + location)
    #expect(empty.status == 0, "\(empty.stderr)")
    #expect(empty.stdout == "")
    let jobs = try container.rawMailbox(namespace: "jobs")
    for value in 1...3 { try jobs.enqueue(Data("\(value)".utf8)) }
    try jobs.enqueue(Data("4".utf8), delay: 3600)
    let claims = try jobs.claimPending(limit: 1)
    #expect(claims.count == 1)
    let mail = try container.rawMailbox(namespace: "mail")
    try mail.pause()
    let text = try Mailboxctl.run(["namespaces"] + location)
    #expect(text.status == 0, "\(text.stderr)")
    #expect(
      text.stdout
        == "NAMESPACE                         DEPTH  PENDING  DELAYED  CLAIMED  QUARANTINED  HELD\n"
        + "jobs                                  4        2        1        1            0  no\n"
        + "mail                                  0        0        0        0            0  yes\n")
    let json = try Mailboxctl.run(["namespaces"] + location + ["--json"])
    #expect(json.status == 0, "\(json.stderr)")
    #expect(
      json.stdout
        == #"{"namespace":"jobs","depth":4,"pending":2,"delayed":1,"claimed":1,"quarantined":0,"held":false}"#
        + "\n"
        + #"{"namespace":"mail","depth":0,"pending":0,"delayed":0,"claimed":0,"quarantined":0,"held":true}"#
        + "\n")
    let refused = try Mailboxctl.run(["namespaces"] + location + ["--namespace", "jobs"])
    #expect(refused.status == 64)
    // A bad per-process value is a usage error, not every namespace listed as unreadable.
    let badTimeout = try Mailboxctl.run(["namespaces"] + location + ["--claim-timeout", "0"])
    #expect(badTimeout.status == 64, "\(badTimeout.stderr)")
    #expect(badTimeout.stdout == "")
    withExtendedLifetime(claims) {}
  }

  @Test
  func `An unconverted namespace is listed without counts, named in the migrate hint, and exit 69`()
    throws
  {
    let container = try TemporaryContainer()
    try FixtureTests.install("apple-spool-0.2.1", into: container)
    _ = try container.rawMailbox(namespace: "new")
    let result = try Mailboxctl.run(["namespaces", "--container", container.url.path])
    #expect(result.status == 69)
    #expect(
      result.stdout
        == "NAMESPACE                         DEPTH  PENDING  DELAYED  CLAIMED  QUARANTINED  HELD\n"
        + "jobs                                  -        -        -        -            -  -\n"
        + "new                                   0        0        0        0            0  no\n")
    #expect(
      result.stderr.contains(
        "mailboxctl: namespaces: jobs: \(container.url.path)/AppGroupMailbox/jobs holds "),
      "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "run 'mailboxctl migrate --container \(container.url.path) --namespace jobs' first"),
      "\(result.stderr)")
    let missing = try Mailboxctl.run(["namespaces", "--container", container.url.path + "/x"])
    #expect(missing.status == 66)
    #expect(
      missing.stderr
        == "mailboxctl: error: namespaces: no such container: \(container.url.path)/x\n")
    let file = container.url.appendingPathComponent("file")
    #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
    let notDirectory = try Mailboxctl.run(["namespaces", "--container", file.path])
    #expect(notDirectory.status == 69)
    #expect(
      notDirectory.stderr.contains("cannot list the mailboxes of \(file.path): openat on the "),
      "\(notDirectory.stderr)")
  }
}
