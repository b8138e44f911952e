import AppGroupMailbox
import Foundation
import Glibc
import Testing

/// `drain --output FILE` acknowledges only what is in the file at FILE. Found by an adversarial
/// review: drain kept appending to a file moved away (logrotate) or deleted, and acknowledged
/// what it wrote there, so those messages were lost with the old file; and a FIFO or device was
/// written to, then reported as not written (fsync(2) fails on them) and delivered again on
/// every run.
@Suite struct CLIOutputFileTests {
  /// The ids in the JSON lines of `file` (none when it is missing).
  static func ids(in file: URL) throws -> [String] {
    guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
    return try jsonLines(String(decoding: data, as: UTF8.self)).compactMap { $0["id"] as? String }
  }

  @Test func `A file moved away or deleted during --follow is opened again at its path`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100))
    let file = container.url.appendingPathComponent("out.jsonl")
    let rotated = container.url.appendingPathComponent("out.jsonl.1")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow", "--output", file.path])
    _ = try (0..<3).map { try mailbox.enqueue(Data("{\"n\":\($0)}".utf8)).id }
    // Written and acknowledged (drain checks the file again after writing: moved before that,
    // the batch would go to the new file too).
    #expect(
      waitUntil(deadline: 30) {
        (try? Self.ids(in: file).count) == 3 && (try? container.remaining().isEmpty) == true
      })
    // As logrotate with compress: moved away, then (once compressed) deleted.
    #expect(rename(file.path, rotated.path) == 0)
    #expect(unlink(rotated.path) == 0)
    let second = try (3..<6).map { try mailbox.enqueue(Data("{\"n\":\($0)}".utf8)).id }
    #expect(waitUntil(deadline: 30) { (try? Self.ids(in: file).count) == 3 })
    drain.signal(SIGTERM)
    let finished = try drain.finish(deadline: 30)
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(try Self.ids(in: file) == second.map { $0.uuidString.lowercased() })
    #expect(try container.remaining().isEmpty)
    #expect(finished.stderr.contains("drain: --output \(file.path) was moved away or deleted"))
  }

  /// Found by an adversarial review: a FILE replaced by a FIFO mid-run was opened again with a
  /// blocking open(2), which waited for a reader while drain held a claimed batch.
  @Test func `A file replaced by a FIFO mid-run ends drain with 74, its batch put back`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 100))
    let file = container.url.appendingPathComponent("out.jsonl")
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow", "--output", file.path])
    try mailbox.enqueue(Data("1".utf8))
    // Written and acknowledged (drain checks the file again after writing).
    #expect(
      waitUntil(deadline: 30) {
        (try? Self.ids(in: file).count) == 1 && (try? container.remaining().isEmpty) == true
      })
    #expect(unlink(file.path) == 0)
    #expect(mkfifo(file.path, 0o600) == 0)
    let second = try mailbox.enqueue(Data("2".utf8)).id
    // No reader ever opens the FIFO: a drain waiting for one would miss the deadline.
    let finished = try drain.finish(deadline: 30)
    #expect(finished.status == 74)
    #expect(
      finished.stderr.hasSuffix(
        "mailboxctl: error: drain: --output: \(file.path) is no longer a regular file: drain "
          + "appends to a file and flushes it to disk with fsync(2) before acknowledging, which "
          + "a directory, FIFO or device cannot take; to hand the messages to a program, drain "
          + "to stdout or use --exec or --coprocess\n"), "\(finished.stderr)")
    let left = try container.remaining()
    #expect(left.map(\.id) == [second])
    #expect(left.allSatisfy { $0.state == .pending && $0.deliveryCount == 0 })
  }

  @Test(arguments: ["fifo", "/dev/null", "directory"])
  func `A FIFO, a device or a directory as --output is refused before anything is claimed`(
    target: String
  ) throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 2)
    var path = target
    var reader: Int32 = -1
    if target == "fifo" {
      path = container.url.appendingPathComponent("fifo").path
      #expect(mkfifo(path, 0o600) == 0)
      // A reader waits on it: drain must not even open it (found by an adversarial review:
      // opened and closed again, the reader saw end of file).
      reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
      #expect(reader >= 0)
    } else if target == "directory" {
      path = container.url.appendingPathComponent("out").path
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }
    defer { if reader >= 0 { close(reader) } }
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--output", path], deadline: 30)
    #expect(result.status == 64)
    #expect(
      result.stderr.hasPrefix(
        "mailboxctl: error: drain: --output: \(path) is not a regular file: drain appends to a "
          + "file and flushes it to disk with fsync(2) before acknowledging"))
    let left = try container.remaining()
    #expect(left.map(\.id) == ids)
    #expect(left.allSatisfy { $0.state == .pending && $0.deliveryCount == 0 })
    if reader >= 0 {
      // No writer ever came and went: no hang-up on the reader's side (pipe(7), fs/pipe.c).
      var waiter = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
      #expect(poll(&waiter, 1, 0) == 0)
    }
  }
}
