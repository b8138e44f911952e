import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Found by an adversarial review: when a handler failed, timed out or exited, drain released
/// its message as soon as the handler itself was gone, while a process it had left in its
/// process group (here one that ignores SIGTERM) still ran: the next delivery of the message
/// ran beside it, and the SIGKILL the documentation promises was never sent.
@Suite struct HandlerGroupTests {
  /// A shell fragment: `verdict` gets "running" when the process whose pid is in `child` can
  /// still run (not a zombie), else "gone".
  func check(child: URL, verdict: URL) -> String {
    """
    state=$(cut -d' ' -f3 /proc/$(cat '\(child.path)')/stat 2>/dev/null)
    case "$state" in ''|Z|X) echo gone ;; *) echo running ;; esac > '\(verdict.path).tmp'
    mv '\(verdict.path).tmp' '\(verdict.path)'
    """
  }

  /// A mailbox holding one message, and the files the first delivery's child and the second
  /// delivery's verdict go to.
  func oneMessage() throws -> (TemporaryContainer, child: URL, verdict: URL) {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    _ = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "1"])
    return (
      container, container.url.appendingPathComponent("child"),
      container.url.appendingPathComponent("verdict")
    )
  }

  /// Runs `drain --follow` on one message with `options` and `handler` until the second
  /// delivery wrote its verdict on the first delivery's child; returns the verdict.
  func secondDeliveryVerdict(
    _ container: TemporaryContainer, verdict: URL, options: [String], handler: [String]
  ) throws -> String? {
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + [
        "--follow", "--retry-delay", "0.01", "--retry-jitter", "0",
      ]
        + options + handler)
    let written = waitUntil(deadline: 60) {
      FileManager.default.fileExists(atPath: verdict.path) || !drain.process.isRunning
    }
    drain.signal(SIGTERM)
    let finished = try drain.finish()
    #expect(written, "\(finished.stderr)")
    return try? String(contentsOf: verdict, encoding: .utf8)
  }

  @Test(arguments: ["sleep 600", "exit 1"])
  func `An --exec handler's message goes back only once its process group is gone`(
    ending: String
  ) throws {
    let (container, child, verdict) = try oneMessage()
    // The first delivery leaves a child that ignores SIGTERM, then times out or fails.
    let script = """
      cat > /dev/null
      if [ "$MAILBOX_DELIVERY_COUNT" = 1 ]; then
        (trap '' TERM; exec sleep 600) &
        echo $! > '\(child.path)'
        \(ending)
      fi
      \(check(child: child, verdict: verdict))
      """
    let result = try secondDeliveryVerdict(
      container, verdict: verdict, options: ["--handler-timeout", "0.5"],
      handler: ["--exec", "sh", "-c", script])
    #expect(result == "gone\n")
  }

  @Test func `A --coprocess handler's messages go back only once its process group is gone`()
    throws
  {
    let (container, child, verdict) = try oneMessage()
    // The first handler leaves a child that ignores SIGTERM (and holds neither of its pipes)
    // and exits with the message unanswered; the second checks on the child and acknowledges.
    let script = """
      import json, os, subprocess, sys
      sys.stdin.readline()
      print(json.dumps({"protocol": "mailboxctl-handler", "version": 1}), flush=True)
      message = json.loads(sys.stdin.readline())
      if message["deliveryCount"] == 1:
          child = subprocess.Popen(
              ["sh", "-c", "trap '' TERM; exec sleep 600"],
              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
          open(\(JSONText.string(child.path)), "w").write(str(child.pid))
          sys.exit(1)
      subprocess.run(["sh", "-c", \(JSONText.string(check(child: child, verdict: verdict)))])
      print(json.dumps({"id": message["id"], "action": "ack"}), flush=True)
      sys.stdin.read()

      """
    let path = container.url.appendingPathComponent("handler.py")
    try Data(script.utf8).write(to: path)
    let result = try secondDeliveryVerdict(
      container, verdict: verdict, options: [],
      handler: ["--coprocess", "/usr/bin/python3", path.path])
    #expect(result == "gone\n")
  }
}
