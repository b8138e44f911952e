import Foundation
import Testing

@testable import AppGroupMailbox

/// The Python implementation written from docs/FORMAT.md reads priority levels as the library
/// writes them (issue 17 item 5).
@Suite struct PriorityInteropTests {
  @Test func `The Python consumer claims library messages by level and keeps a level on release`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for (text, level) in [("a", 2), ("b", 9), ("c", 5), ("d", 9), ("e", 0)] {
      try mailbox.enqueue(Data("\"\(text)\"".utf8), priority: level)
    }
    let released = try PythonSpool.run("release-delay", container, ["--delay", "600"])
    #expect(released.status == 0, "\(released.stderr)")
    let delayed = container.names("delayed")
    #expect(delayed.count == 1 && delayed[0].dropFirst(17).hasPrefix("p9-"))
    #expect(try mailbox.inspector.entries(in: [.delayed]).map(\.priority) == [9])
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload) == ["\"d\"", "\"c\"", "\"a\"", "\"e\""])
  }
}
