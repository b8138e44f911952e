import Foundation
import Testing

@testable import AppGroupMailbox

/// Issue 16, step 3: every descriptor the system layer opens is closed exactly once, on every
/// path (a mailbox let go, an open that fails half-way), and the failure keeps its cause.
@Suite struct DescriptorTests {
  /// Runs the worker's `open-repeatedly` on `container` and returns its output lines.
  private func openRepeatedly(_ container: TemporaryContainer, times: Int) throws -> [String] {
    let result = try Processes.start(
      Processes.product("MailboxTestWorker"),
      ["open-repeatedly", container.url.path, "jobs", "\(times)"]
    ).finish()
    try #require(result.status == 0, "worker failed: \(result.stderr)")
    return result.lines
  }

  @Test func `Opening and letting go of a mailbox 200 times leaves no descriptor open`() throws {
    let container = try TemporaryContainer()
    _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    let lines = try openRepeatedly(container, times: 200)
    let counts = try #require(lines.first?.split(separator: " ").dropFirst().map(String.init))
    #expect(counts.count == 2 && counts[0] == counts[1], "\(lines)")
    #expect(lines.count == 1)
  }

  @Test func `An open that fails half-way 200 times closes what it opened and names the cause`()
    throws
  {
    let container = try TemporaryContainer()
    _ = try AppGroupMailbox<String>(containerURL: container.url, namespace: "jobs")
    // The container, AppGroupMailbox/, the namespace and tmp/ are open when pending/ is refused.
    let pending = container.area("pending")
    try FileManager.default.removeItem(at: pending)
    try FileManager.default.createSymbolicLink(
      at: pending, withDestinationURL: container.url.appendingPathComponent("elsewhere"))
    let lines = try openRepeatedly(container, times: 200)
    let counts = try #require(lines.first?.split(separator: " ").dropFirst().map(String.init))
    #expect(counts.count == 2 && counts[0] == counts[1], "\(lines)")
    #expect(
      lines.dropFirst()
        == [
          "The mailbox container is unavailable: open mailbox: openat on the pending area failed: "
            + "Not a directory (errno 20)."
        ])
  }

  @Test func `Named errno cases are the C values`() {
    #expect(Errno.noSuchFileOrDirectory.rawValue == ENOENT)
    #expect(Errno.fileExists.rawValue == EEXIST)
    #expect(Errno.tooManySymbolicLinkLevels.rawValue == ELOOP)
    #expect(Errno.improperLink.rawValue == EXDEV)
    #expect(Errno.wouldBlock.rawValue == EAGAIN)
    #expect(Errno.noSpace.explanation == "No space left on device (errno 28)")
  }
}
