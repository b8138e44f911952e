import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// python/mailbox_handler.py keeps the protocol off descriptors 0 and 1 (found by an
/// adversarial review: what a handler's child process wrote to stdout was a garbage line that
/// stopped the handler and failed every message it held, and drain gave up with 69).
@Suite struct PythonHandlerDescriptorTests {
  @Test func `Programs a Python handler runs neither write into nor read from the protocol`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 6)
    let arguments = try PythonHandler.write(
      """
      import subprocess
      def handle(message):
          subprocess.run(["echo", "a line from a child"], check=True)
          subprocess.run(["cat"], check=True)  # reads end of file, not the next message
          os.system("echo another")
          print("and print()")
      mailbox_handler.run(handle, threads=2)

      """, in: container)
    let finished = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "2"] + arguments)
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(
      drainSummary(finished.stderr)
        == "mailboxctl: drain: delivered 6, released 0, quarantined 0", "\(finished.stderr)")
    #expect(finished.stderr.components(separatedBy: "a line from a child").count == 7)
    #expect(try container.remaining().isEmpty)
  }
}
