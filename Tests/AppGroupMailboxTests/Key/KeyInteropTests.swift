import Foundation
import Testing

@testable import AppGroupMailbox

/// What a reader that predates keys does with keyed messages (docs/FORMAT.md, "Keys"): the
/// Python implementation, written from FORMAT.md before keys existed, stands for it.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct KeyInteropTests {
  @Test
  func
    `An older consumer drains keyed messages as any other; keyed enqueues never touch an older producer's`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let keyed = try mailbox.enqueue(Data("\"a\"".utf8), key: "widget", onConflict: .replace)
    let python = try PythonSpool.enqueue(["\"p\""], into: container)
    #expect(python.map(\.outcome) == ["published"])
    #expect(
      try mailbox.enqueue(Data("\"b\"".utf8), key: "widget", onConflict: .replace)
        == .replaced(keyed.id))
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload) == ["\"b\"", "\"p\""])
    #expect(drained.map(\.id) == [keyed.id.uuidString.lowercased(), python[0].id])
    try container.expectDepth(0)
    // The index now names a message the older consumer acknowledged: stale, passed over.
    let next = try mailbox.enqueue(Data("\"c\"".utf8), key: "widget", onConflict: .keep)
    #expect(next != .kept(keyed.id))
    #expect(try container.pendingFiles().map(\.message) == ["\"c\""])
  }
}
