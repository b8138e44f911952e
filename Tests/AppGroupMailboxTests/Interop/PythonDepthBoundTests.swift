import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The Python producer and the depth bound (reviewer, branch adv): docs/FORMAT.md says the
/// stored settings apply to every opener whatever limits it was given, and entries readdir
/// reports as other than regular files are not counted.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonDepthBoundTests {
  /// One message a line through `agm_spool.py enqueue --lines`, whatever its exit status.
  static func pythonEnqueue(_ count: Int, _ container: TemporaryContainer, _ arguments: [String])
    throws -> Finished
  {
    let input = Data((0..<count).map { "{\"n\":\($0)}\n" }.joined().utf8)
    return try PythonSpool.start("enqueue", container, ["--lines"] + arguments, stdin: input)
      .finish()
  }

  @Test func `A Python producer follows the stored maxMessages, not its own default`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 2))
    #expect(mailbox.settings.maxMessages == 2)
    // No --max-messages: the stored settings (maxMessages 2) apply.
    let finished = try Self.pythonEnqueue(4, container, [])
    #expect(container.names("pending").count == 2, "pending: \(container.names("pending").count)")
    #expect(finished.lines.filter { $0.hasSuffix(" published") }.count == 2)
  }

  @Test func `A Python producer does not count a FIFO in pending as a message`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxMessages: 2))
    try mailbox.enqueue(Data("1".utf8))
    // A FIFO under a message's name: not a message, not counted (FORMAT.md, "The state file and
    // the lock"); the Swift library admits one more.
    let fifo = container.area("pending").appendingPathComponent(
      "1767225600000000-00000000000000000009-11111111-2222-4333-8444-555555555555-0.msg")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    let finished = try Self.pythonEnqueue(1, container, ["--max-messages", "2"])
    #expect(finished.status == 0, "python: \(finished.stdout) \(finished.stderr)")
    #expect(finished.lines.first?.hasSuffix(" published") == true)
  }
}
