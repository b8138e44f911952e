import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// How `drain --coprocess` ends its handler when nothing is in flight, and what it reports when
/// the mailbox goes away under it (found by an adversarial review): a process the handler left
/// in its group outlived drain; a stop signal gave the handler 5 s whatever
/// `--shutdown-timeout` said; a deleted namespace ended drain with 74 from a release that
/// followed instead of 66.
@Suite struct CoprocessShutdownTests {
  /// A mailbox holding one message.
  func oneMessage() throws -> TemporaryContainer {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    _ = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "1"])
    return container
  }

  /// A raw handler: greets, then runs `body` (Python, with `sys`, `json`, `os`, `subprocess` and
  /// `time` imported and `greet()` done).
  func handler(_ body: String, in container: TemporaryContainer) throws -> [String] {
    let script = """
      import json, os, subprocess, sys, time
      sys.stdin.readline()
      print(json.dumps({"protocol": "mailboxctl-handler", "version": 1}), flush=True)
      \(body)

      """
    let path = container.url.appendingPathComponent("handler.py")
    try Data(script.utf8).write(to: path)
    return ["--coprocess", "/usr/bin/python3", path.path]
  }

  @Test func `A process the handler leaves in its group is stopped before drain exits`() throws {
    let container = try oneMessage()
    let child = container.url.appendingPathComponent("child")
    // Acknowledges, and at end of input leaves a child in its group that ignores SIGTERM.
    let arguments = try handler(
      """
      message = json.loads(sys.stdin.readline())
      print(json.dumps({"id": message["id"], "action": "ack"}), flush=True)
      sys.stdin.read()
      worker = subprocess.Popen(
          ["sh", "-c", "trap '' TERM; exec sleep 600"],
          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      open(\(JSONText.string(child.path)), "w").write(str(worker.pid))
      """, in: container)
    let finished = try Mailboxctl.run(["drain"] + container.arguments() + arguments)
    #expect(finished.status == 0, "\(finished.stderr)")
    let pid = try String(contentsOf: child, encoding: .utf8)
    // Stopped (SIGKILL after the 5 s grace), not running beside the next drain: at most a
    // zombie until init reaps it.
    let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))
      .flatMap { $0.split(separator: ")").last?.split(separator: " ").first }
    #expect(state == nil || state == "Z" || state == "X", "state \(state ?? "-")")
  }

  /// A second review: a member whose main thread exited while another thread runs shows as a
  /// zombie in /proc, so drain sent nothing and exited while it worked on.
  @Test func `A member whose main thread exited is stopped before drain exits`() throws {
    let container = try oneMessage()
    let child = container.url.appendingPathComponent("child")
    let member = container.url.appendingPathComponent("member.py")
    // A thread that runs on after the main thread's exit(2) (SYS_exit, 60 on x86_64).
    try Data(
      """
      import ctypes, os, threading, time
      open(\(JSONText.string(child.path)), "w").write(str(os.getpid()))
      threading.Thread(target=lambda: time.sleep(600)).start()
      ctypes.CDLL(None).syscall(60, 0)

      """.utf8
    ).write(to: member)
    let arguments = try handler(
      """
      message = json.loads(sys.stdin.readline())
      subprocess.Popen(
          ["/usr/bin/python3", \(JSONText.string(member.path))],
          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      while not os.path.exists(\(JSONText.string(child.path))):
          time.sleep(0.01)
      print(json.dumps({"id": message["id"], "action": "ack"}), flush=True)
      sys.stdin.read()
      """, in: container)
    let finished = try Mailboxctl.run(["drain"] + container.arguments() + arguments)
    #expect(finished.status == 0, "\(finished.stderr)")
    let pid = try String(contentsOf: child, encoding: .utf8)
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let threads = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
    #expect(threads == nil || threads == "Threads:\t1", "\(threads ?? "-")")
  }

  /// A second review: the handler's exit got its own --shutdown-timeout after the one its
  /// messages had, so a stop could take twice as long.
  @Test func `--shutdown-timeout counts from the signal for the handler's exit too`() throws {
    let container = try oneMessage()
    let got = container.url.appendingPathComponent("got")
    let finishedMark = container.url.appendingPathComponent("finished")
    // 4 s on its message, then 4 s more at end of input: past 6 s from the signal in all.
    let arguments = try handler(
      """
      message = json.loads(sys.stdin.readline())
      open(\(JSONText.string(got.path)), "w").write("got")
      time.sleep(4)
      print(json.dumps({"id": message["id"], "action": "ack"}), flush=True)
      sys.stdin.read()
      time.sleep(4)
      open(\(JSONText.string(finishedMark.path)), "w").write("done")
      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow", "--shutdown-timeout", "6"] + arguments)
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: got.path) })
    drain.signal(SIGTERM)
    let finished = try drain.finish()
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(drainSummary(finished.stderr)?.hasPrefix("mailboxctl: drain: delivered 1") == true)
    // Stopped 6 s after the signal, before its 8 s were up.
    #expect(!FileManager.default.fileExists(atPath: finishedMark.path))
  }

  @Test func `After a stop signal an idle handler gets --shutdown-timeout to exit`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let finishedMark = container.url.appendingPathComponent("finished")
    let ready = container.url.appendingPathComponent("ready")
    // At end of input it takes 7 s to finish (longer than the 5 s drain gave it before).
    let arguments = try handler(
      """
      open(\(JSONText.string(ready.path)), "w").write("ready")
      sys.stdin.read()
      time.sleep(7)
      open(\(JSONText.string(finishedMark.path)), "w").write("done")
      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow", "--shutdown-timeout", "600"] + arguments)
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: ready.path) })
    drain.signal(SIGTERM)
    let finished = try drain.finish()
    #expect(finished.status == 0, "\(finished.stderr)")
    #expect(FileManager.default.fileExists(atPath: finishedMark.path), "\(finished.stderr)")
  }

  @Test func `A namespace deleted while a handler holds a message ends drain with 66`() throws {
    let container = try oneMessage()
    let got = container.url.appendingPathComponent("got")
    let arguments = try handler(
      """
      sys.stdin.readline()
      open(\(JSONText.string(got.path)), "w").write("got")
      sys.stdin.read()
      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow"] + arguments)
    #expect(waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: got.path) })
    try FileManager.default.removeItem(
      at: container.url.appendingPathComponent("AppGroupMailbox/jobs"))
    let finished = try drain.finish(deadline: 60)
    #expect(finished.status == 66, "\(finished.stderr)")
    #expect(
      finished.stderr.hasSuffix(
        "the mailbox directory was deleted, moved or replaced while the command ran\n"),
      "\(finished.stderr)")
  }
}
