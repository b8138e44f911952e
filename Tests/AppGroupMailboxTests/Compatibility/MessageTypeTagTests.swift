import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The same shape and name as the worker's `Job` (module `MailboxTestWorker`), declared
/// `fileprivate` here: its qualified name holds this launch's runtime address.
private struct Job: Codable, Sendable, Equatable {
  var number: Int
  var text: String
}

/// A second type sharing a namespace with `Job`.
private struct Invoice: Codable, Sendable, Equatable {
  var total: Int
}

/// The default message tag is stable across modules, launches and access levels, and a tag never
/// deletes or quarantines a message.
@Suite struct MessageTypeTagTests {
  @Test func `A same-shaped type in another module receives every message`() throws {
    let container = try TemporaryContainer()
    let produced = try Processes.runWorker(
      ["typed-produce", container.url.path, "jobs", "1", "50"])
    #expect(produced.status == 0)
    let mailbox = try container.mailbox(Job.self)
    #expect(mailbox.messageType == "Job")
    let claims = try mailbox.claimPending()
    #expect(claims.map(\.message.number) == Array(1...50))
    #expect(claims.map(\.message.text) == (1...50).map { "job \($0) é" })
    #expect(container.quarantined().isEmpty)
  }

  @Test func `A private type receives every message across restarts, old address tags included`()
    throws
  {
    let container = try TemporaryContainer()
    let first = try Processes.runWorker(["private-produce", container.url.path, "jobs", "0", "5"])
    #expect(first.status == 0)
    #expect(first.lines.first == "PrivateJob")
    #expect(first.lines.last?.contains("(unknown context at $") == true)
    // What an earlier version wrote on another launch: the qualified name with that launch's
    // address.
    let raw = try container.rawMailbox()
    try raw.enqueue(
      Data("{\"number\":5}".utf8),
      messageType: "MailboxTestWorker.(unknown context at $5581d0c0ffee).PrivateJob")
    let second = try Processes.runWorker(["private-produce", container.url.path, "jobs", "6", "4"])
    #expect(second.status == 0)
    let consumed = try Processes.runWorker(["private-consume", container.url.path, "jobs"])
    #expect(consumed.status == 0)
    #expect(consumed.lines == (0..<10).map(String.init))
    #expect(container.quarantined().isEmpty)
    #expect(container.names("pending").isEmpty)
  }

  @Test func `Messages written with the old qualified default tags reach the type that wrote them`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let tags = [
      "MailboxTestWorker.Job", "AppGroupMailboxTests.(unknown context at $7f00deadbeef).Job",
      "Job", "",
    ]
    for (number, tag) in tags.enumerated() {
      try raw.enqueue(
        Data("{\"number\":\(number),\"text\":\"t\"}".utf8), messageType: tag)
    }
    let mailbox = try container.mailbox(Job.self)
    #expect(try mailbox.claimPending().map(\.message.number) == [0, 1, 2, 3])
    #expect(container.quarantined().isEmpty)
  }

  @Test func `Two types share a namespace: each consumer gets its own in order, nothing is lost`()
    throws
  {
    let container = try TemporaryContainer()
    let recorder = DiagnosticRecorder()
    let jobs = try container.mailbox(Job.self, diagnostics: recorder)
    let invoices = try container.mailbox(Invoice.self, diagnostics: recorder)
    for number in 0..<6 {
      if number.isMultiple(of: 2) {
        try invoices.enqueue(Invoice(total: number))
      } else {
        try jobs.enqueue(Job(number: number, text: "j"))
      }
    }
    // The invoice at the head does not stop the job consumer, and limit counts only its own.
    #expect(try jobs.claimPending(limit: 2).map(\.message.number) == [1, 3])
    #expect(container.pendingNames().count == 4)
    #expect(try jobs.claimPending().map(\.message.number) == [5])
    // Once read, another type's messages are passed over without being renamed again.
    let invoiceFiles = container.names("pending").sorted()
    #expect(invoiceFiles.count == 3)
    let changed = try invoiceFiles.map { try ctime(container, $0) }
    #expect(try jobs.claimPending().isEmpty)
    #expect(container.names("pending").sorted() == invoiceFiles)
    #expect(try invoiceFiles.map { try ctime(container, $0) } == changed)
    #expect(container.pendingNames().map(\.attempts) == [0, 0, 0])
    // Visible where an operator looks: counted as pending, listed with their type.
    let status = try jobs.inspector.status()
    #expect(status.pending == 3)
    #expect(status.quarantined == 0)
    let listed = try Mailboxctl.run(
      ["list"] + container.arguments() + ["--state", "pending", "--json"])
    #expect(try jsonLines(listed.stdout).count == 3)
    let theirs = try invoices.claimPending()
    #expect(theirs.map(\.message.total) == [0, 2, 4])
    #expect(theirs.map(\.deliveryCount) == [1, 1, 1])
    #expect(container.quarantined().isEmpty)
    #expect(recorder.all.isEmpty)
  }

  @Test func `An explicit tag takes only itself and untyped messages`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    for tag in ["Job", "App.Job", "com.example.Job", ""] {
      try raw.enqueue(Data("{\"number\":1,\"text\":\"\(tag)\"}".utf8), messageType: tag)
    }
    let pinned = try container.mailbox(Job.self, messageType: "com.example.Job")
    #expect(try pinned.claimPending().map(\.message.text) == ["com.example.Job", ""])
    let byDefault = try container.mailbox(Job.self)
    #expect(try byDefault.claimPending().map(\.message.text) == ["Job", "App.Job"])
    #expect(container.quarantined().isEmpty)
  }

  @Test(arguments: [
    ("App.Job", "Job"), ("Job", "Job"), ("App.(unknown context at $55d0c0a1).Job", "Job"),
    ("App.Outer.Inner", "Inner"), ("Swift.Array<App.Outer.Inner>", "Array<Inner>"),
    (
      "Swift.Dictionary<Swift.String, App.(unknown context at $1).Job>",
      "Dictionary<String, Job>"
    ),
    ("Swift.Optional<App.Job>", "Optional<Job>"), ("", ""),
  ])
  func `The unqualified form of a qualified name is what String(describing:) prints`(
    qualified: String, expected: String
  ) {
    #expect(MessageTypeTag.unqualified(qualified) == expected)
  }

  @Test func `The default tag is the name String(describing:) prints`() {
    #expect(MessageTypeTag.defaultTag(of: Job.self) == "Job")
    #expect(MessageTypeTag.defaultTag(of: [Job].self) == "Array<Job>")
    #expect(MessageTypeTag.defaultTag(of: [String: Job].self) == "Dictionary<String, Job>")
    #expect(
      MessageTypeTag.unqualified(String(reflecting: [String: Job].self))
        == "Dictionary<String, Job>")
  }

  private func ctime(_ container: TemporaryContainer, _ name: String) throws -> Int {
    var info = stat()
    guard lstat(container.area("pending").appendingPathComponent(name).path, &info) == 0 else {
      throw POSIXError(.ENOENT)
    }
    return info.st_ctim.tv_sec * 1_000_000_000 + info.st_ctim.tv_nsec
  }
}
