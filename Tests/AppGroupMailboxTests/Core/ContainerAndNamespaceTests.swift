import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// App group container resolution, identifier and namespace rules (the basics; hostile names
/// are the hardening issue's).
@Suite struct ContainerAndNamespaceTests {
  @Test func `APP_GROUP_CONTAINER_ROOT wins over XDG_DATA_HOME and HOME`() throws {
    let url = try AppGroupContainer.url(
      forIdentifier: "group.com.example.app",
      environment: [
        "APP_GROUP_CONTAINER_ROOT": "/srv/groups", "XDG_DATA_HOME": "/data", "HOME": "/home/u",
      ])
    #expect(url.path == "/srv/groups/group.com.example.app")
  }

  @Test func `XDG_DATA_HOME is used when absolute, else HOME`() throws {
    let xdg = try AppGroupContainer.url(
      forIdentifier: "group.a", environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
    #expect(xdg.path == "/data/app-groups/group.a")
    let emptyRoot = try AppGroupContainer.url(
      forIdentifier: "group.a",
      environment: ["APP_GROUP_CONTAINER_ROOT": "", "XDG_DATA_HOME": "/data", "HOME": "/home/u"])
    #expect(emptyRoot.path == "/data/app-groups/group.a")
    let relative = try AppGroupContainer.url(
      forIdentifier: "group.a", environment: ["XDG_DATA_HOME": "data", "HOME": "/home/u"])
    #expect(relative.path == "/home/u/.local/share/app-groups/group.a")
    let home = try AppGroupContainer.url(forIdentifier: "group.a", environment: ["HOME": "/home/u"])
    #expect(home.path == "/home/u/.local/share/app-groups/group.a")
    let noRoot = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      try AppGroupContainer.url(forIdentifier: "group.a", environment: [:])
    }
    #expect(
      noRoot?.containerUnavailableCause
        == .init(operation: "find container root", systemCall: "", errno: ENOENT))
    #expect(throws: AppGroupMailboxError.containerUnavailable) {
      try AppGroupContainer.url(forIdentifier: "group.a", environment: ["HOME": "relative"])
    }
  }

  @Test(arguments: [
    "", ".", "..", ".hidden", "a/b", "../escape", "a b", "gr\u{e9}up", "a\0b",
    String(repeating: "a", count: 256),
  ])
  func `Invalid app group identifiers are rejected`(identifier: String) {
    #expect(!AppGroupContainer.isValid(identifier))
    let error = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      try AppGroupContainer.url(forIdentifier: identifier, environment: ["HOME": "/home/u"])
    }
    #expect(
      error?.errorDescription
        == "The mailbox container is unavailable: check app group identifier: Invalid argument "
        + "(errno 22).")
  }

  @Test(arguments: [
    "group.com.example.app", "A-b_c.9", "-x", String(repeating: "a", count: 255),
  ])
  func `Valid app group identifiers are accepted`(identifier: String) throws {
    #expect(AppGroupContainer.isValid(identifier))
    let url = try AppGroupContainer.url(
      forIdentifier: identifier, environment: ["APP_GROUP_CONTAINER_ROOT": "/r"])
    #expect(url.path == "/r/" + identifier)
  }

  @Test func `A process opening a mailbox by app group identifier uses APP_GROUP_CONTAINER_ROOT`()
    throws
  {
    let container = try TemporaryContainer()
    let result = try Processes.start(
      Processes.product("MailboxTestWorker"), ["core-appgroup", "group.test.app", "jobs", "hello"],
      environment: ["APP_GROUP_CONTAINER_ROOT": container.url.path]
    ).finish()
    #expect(result.status == 0)
    let expected = container.url.appendingPathComponent("group.test.app/AppGroupMailbox/jobs").path
    #expect(result.lines == [expected])
    let mailbox = try AppGroupMailbox<String>(
      containerURL: container.url.appendingPathComponent("group.test.app"), namespace: "jobs")
    #expect(try mailbox.claimPending().map(\.message) == ["hello"])
  }

  @Test func `An invalid identifier or namespace fails before anything is created`() throws {
    let container = try TemporaryContainer()
    let result = try Processes.start(
      Processes.product("MailboxTestWorker"), ["core-appgroup", "../group", "jobs", "x"],
      environment: ["APP_GROUP_CONTAINER_ROOT": container.url.path]
    ).finish()
    #expect(result.status == 1)
    #expect(result.stderr.contains("containerUnavailable"))
    let badNamespace = try Processes.start(
      Processes.product("MailboxTestWorker"), ["core-appgroup", "group.ok", "../jobs", "x"],
      environment: ["APP_GROUP_CONTAINER_ROOT": container.url.path]
    ).finish()
    #expect(badNamespace.status == 1)
    #expect(badNamespace.stderr.contains("invalidNamespace"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
  }

  @Test(arguments: [
    "", ".", "..", "...", "a/b", "../escape", "a\0b", "caf\u{e9}", "a b",
    String(repeating: "n", count: 65),
  ])
  func `Invalid namespaces throw invalidNamespace and create nothing`(namespace: String) throws {
    let container = try TemporaryContainer()
    #expect(throws: AppGroupMailboxError.invalidNamespace) {
      let _: AppGroupMailbox<String> = try container.mailbox(namespace: namespace)
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
  }

  @Test(arguments: ["jobs", "Jobs", "a.b_c-D9", ".hidden", String(repeating: "n", count: 64)])
  func `Valid namespaces open their own directory`(namespace: String) throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox(namespace: namespace)
    try mailbox.enqueue("x")
    #expect(mailbox.directoryURL.lastPathComponent == namespace)
    #expect(container.pendingNames(namespace: namespace).count == 1)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: mailbox.directoryURL.path).sorted() == [
        "claimed", "delayed", "pending", "quarantine", "settings", "state", "tmp",
      ])
  }

  @Test func `Invalid limits are rejected by name before anything is created`() throws {
    let container = try TemporaryContainer()
    let cases: [(AppGroupMailboxLimits, String)] = [
      (.init(maxMessages: 0), "maxMessages"),
      (.init(maxPayloadBytes: 0), "maxPayloadBytes"),
      (.init(messageLifetime: 0), "messageLifetime"),
      (.init(claimTimeout: -1), "claimTimeout"),
      (.init(maxQuarantinedFiles: -1), "maxQuarantinedFiles"),
    ]
    for (limits, name) in cases {
      #expect(throws: AppGroupMailboxError.invalidLimit(name)) {
        let _: AppGroupMailbox<String> = try container.mailbox(limits: limits)
      }
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: container.url.path) == [])
  }
}
