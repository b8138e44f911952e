import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// The lifecycle of a `drain --coprocess` handler: answers it writes just before it exits, a
/// shutdown while it still works, background processes it leaves holding its stdout, and
/// answers it writes twice. Every answer the handler wrote is applied, and no message goes
/// back while the handler may still be working on it.
@Suite struct CoprocessLifecycleTests {
  /// The greeting of a handler written without the library (`print` goes to stdout here).
  static let greet = """
    import json, os, signal, subprocess, sys, time
    sys.stdin.readline()
    sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
    sys.stdout.flush()
    def ack(i):
        sys.stdout.write(json.dumps({"id": i, "action": "ack"}) + "\\n")
        sys.stdout.flush()

    """

  /// Writes a plain Python handler (``greet`` then `body`); returns the `--coprocess` arguments.
  func handler(_ body: String, in container: TemporaryContainer) throws -> [String] {
    let script = container.url.appendingPathComponent("handler.py")
    try Data((Self.greet + body).utf8).write(to: script)
    return ["--coprocess", "/usr/bin/python3", script.path]
  }

  /// Expects a drain that ended with status 0 having delivered `count` messages and left none.
  func expectAllDelivered(_ result: Finished, count: Int, _ container: TemporaryContainer) throws {
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      drainSummary(result.stderr)
        == "mailboxctl: drain: delivered \(count), released 0, quarantined 0")
    #expect(try container.remaining().isEmpty)
  }

  /// The pids listed one a line in `file`.
  func pids(_ file: URL) throws -> [pid_t] {
    try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap {
      pid_t($0)
    }
  }

  /// Whether `pid` is gone (or a zombie no one reaped: it runs no more).
  func isGone(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
      return true
    }
    return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
  }

  /// A program written for `--exec` (it reads its input and never answers) given to
  /// `--coprocess` was waited for through five greeting timeouts (2.5 minutes) before drain
  /// gave up: a handler that did not answer the greeting is given up on at once.
  @Test func `A handler that does not answer the greeting is given up on at once`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let starts = container.url.appendingPathComponent("starts")
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments()
        + [
          "--greeting-timeout", "0.5", "--coprocess", "/bin/sh", "-c",
          "echo started >> '\(starts.path)'; cat > /dev/null",
        ])
    #expect(result.status == 69, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "mailboxctl: error: drain: --coprocess: the handler did not answer the greeting within "))
    #expect(result.stderr.contains("; giving up\n"))
    // One start, not five.
    #expect(try String(contentsOf: starts, encoding: .utf8) == "started\n")
    #expect(try container.remaining().map(\.deliveryCount) == [0])
  }

  /// The give-up above is for programs that do not speak the protocol: a handler that answered
  /// the greeting before and is too slow on a restart is restarted, as any end (a review found
  /// a drain that had worked for hours ending on one slow restart).
  @Test func `A handler that greeted before and is slow to greet again is restarted`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let runs = container.url.appendingPathComponent("runs")
    let script = container.url.appendingPathComponent("handler.py")
    try Data(
      """
      import json, sys, time
      with open("\(runs.path)", "a+") as f:
          f.write("run\\n")
          f.seek(0)
          run = len(f.read().splitlines())
      sys.stdin.readline()
      if run == 2:
          time.sleep(2)  # the greeting's answer comes too late: drain stops this one
      def answer(value):
          sys.stdout.write(json.dumps(value) + "\\n")
          sys.stdout.flush()
      answer({"protocol": "mailboxctl-handler", "version": 1})
      for line in sys.stdin:
          answer({"id": json.loads(line)["id"], "action": "ack"})
          if run == 1:
              sys.exit(3)

      """.utf8
    ).write(to: script)
    let arguments = ["--coprocess", "/usr/bin/python3", script.path]
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--greeting-timeout", "0.5"] + arguments)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stderr.contains("did not answer the greeting within 0.5 s"))
    #expect(try String(contentsOf: runs, encoding: .utf8) == "run\nrun\nrun\n")
    #expect(try container.remaining().isEmpty)
  }

  @Test func `Acks written just before the handler exits are all applied`() throws {
    // The handler widens its stdout pipe (F_SETPIPE_SZ), writes four long ack lines at once and
    // exits: its exit is noticed while drain is still reading them. Four rounds, as the
    // reader and the exit race.
    for _ in 0..<4 {
      let container = try TemporaryContainer()
      _ = try container.rawMailbox(limits: .init(maxMessages: 100, maxDeliveryAttempts: 1))
      try container.enqueueNumbered(count: 4)
      let arguments = try handler(
        """
        import fcntl
        fcntl.fcntl(1, 1031, 1 << 20)
        held = [json.loads(sys.stdin.readline())["id"] for _ in range(4)]
        pad = "x" * 200000
        for i in held:
            sys.stdout.write(json.dumps({"id": i, "action": "ack", "pad": pad}) + "\\n")
        sys.stdout.flush()
        sys.exit(0)

        """, in: container)
      let result = try Mailboxctl.run(
        ["drain"] + container.arguments() + ["--jobs", "4", "--retry-delay", "3600"] + arguments)
      try expectAllDelivered(result, count: 4, container)
      #expect(container.names("quarantine") == [])
    }
  }

  @Test func `A stopped drain keeps the message claimed until its handler answers, then acks it`()
    throws
  {
    let container = try TemporaryContainer()
    let id = try container.enqueueNumbered(count: 1)[0]
    let started = container.url.appendingPathComponent("started")
    let terminated = container.url.appendingPathComponent("terminated")
    let go = container.url.appendingPathComponent("go")
    // It records SIGTERM instead of dying, and answers only when the test says so.
    let arguments = try handler(
      """
      signal.signal(signal.SIGTERM, lambda *_: open(\(JSONText.string(terminated.path)), "w").close())
      i = json.loads(sys.stdin.readline())["id"]
      open(\(JSONText.string(started.path)), "w").close()
      while not os.path.exists(\(JSONText.string(go.path))):
          time.sleep(0.01)
      ack(i)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--shutdown-timeout", "0.2"] + arguments)
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: started.path) })
    drain.signal(SIGTERM)
    // Past --shutdown-timeout drain stops the handler (SIGTERM), which still works.
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: terminated.path) })
    let left = try container.remaining()
    #expect(left.map(\.id) == [id])
    #expect(left.map(\.state) == [.claimed])
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    try expectAllDelivered(try drain.finish(), count: 1, container)
  }

  @Test func `A stop signal closes the handler's stdin at once; what it then answers is applied`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let started = container.url.appendingPathComponent("started")
    // It answers only after it read end of file (drain will send nothing more).
    let arguments = try handler(
      """
      i = json.loads(sys.stdin.readline())["id"]
      open(\(JSONText.string(started.path)), "w").close()
      if sys.stdin.readline() == "":
          ack(i)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--shutdown-timeout", "20"] + arguments)
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: started.path) })
    drain.signal(SIGTERM)
    try expectAllDelivered(try drain.finish(), count: 1, container)
  }

  @Test
  func `A handler that dies leaving a child on its stdout is restarted; the child is stopped`()
    throws
  {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let children = container.url.appendingPathComponent("children")
    // Each run starts a background process in its group (holding its stdout), takes a message
    // and dies: five deaths in a row end drain with 69.
    let arguments = try handler(
      """
      child = subprocess.Popen(["sleep", "300"], stderr=subprocess.DEVNULL)
      with open(\(JSONText.string(children.path)), "a") as f:
          f.write(f"{child.pid}\\n")
      sys.stdin.readline()
      os._exit(3)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--retry-delay", "0.01"] + arguments)
    let result = try drain.finish(deadline: 60)
    #expect(result.status == 69, "\(result.stderr)")
    #expect(result.stderr.contains("the handler ended 5 times in a row without an answer"))
    let started = try pids(children)
    #expect(started.count == 5)
    #expect(started.filter { !isGone($0) } == [])
    for pid in started { kill(pid, SIGKILL) }
  }

  @Test func `A handler's stdout held outside its group delays the restart by the grace only`()
    throws
  {
    let container = try TemporaryContainer()
    let id = try container.enqueueNumbered(count: 1)[0]
    let children = container.url.appendingPathComponent("children")
    // The first run starts a process in a session of its own (no signal to the group reaches
    // it) that holds its stdout, takes the message and dies; later runs ack what they get.
    let arguments = try handler(
      """
      if not os.path.exists(\(JSONText.string(children.path))):
          child = subprocess.Popen(
              ["sleep", "300"], start_new_session=True, stderr=subprocess.DEVNULL)
          with open(\(JSONText.string(children.path)), "a") as f:
              f.write(f"{child.pid}\\n")
          sys.stdin.readline()
          os._exit(3)
      for line in sys.stdin:
          i = json.loads(line)["id"]
          ack(i)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--retry-delay", "3600"] + arguments)
    defer { for pid in (try? pids(children)) ?? [] { kill(pid, SIGKILL) } }
    let result = try drain.finish(deadline: 60)
    #expect(result.status == 75, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        ") exit status 3 (its output stayed open 6 s after it exited); "
          + "1 unanswered message released\n"))
    #expect(
      drainSummary(result.stderr) == "mailboxctl: drain: delivered 0, released 1, quarantined 0")
    let left = try container.remaining()
    #expect(left.map(\.id) == [id])
    #expect(left.map(\.state) == [.delayed])
  }

  /// The pipe (`pipe:[inode]`) that descriptor `fd` of `pid` is, or nil.
  func pipe(_ pid: pid_t, _ fd: Int32) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")
  }

  /// Whether any descriptor of `pid` is the pipe `target`.
  func holds(_ pid: pid_t, _ target: String) -> Bool {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    return fds.contains { pipe(pid, Int32($0) ?? -1) == target }
  }

  @Test func `A following drain lets go of a handler's stdout that a process outside it holds`()
    throws
  {
    // Found by an adversarial session: drain's reader thread stayed blocked reading such a
    // pipe for as long as the process held it, one thread and one descriptor per handler run,
    // in a drain --follow that runs for months.
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 1)
    let children = container.url.appendingPathComponent("children")
    let arguments = try handler(
      """
      for line in sys.stdin:
          ack(json.loads(line)["id"])
          child = subprocess.Popen(
              ["sleep", "300"], start_new_session=True, stderr=subprocess.DEVNULL)
          with open(\(JSONText.string(children.path)), "a") as f:
              f.write(f"{child.pid}\\n")
          os._exit(0)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--follow"] + arguments)
    defer {
      drain.signal(SIGKILL)
      for pid in (try? pids(children)) ?? [] { kill(pid, SIGKILL) }
    }
    #expect(waitUntil(deadline: 60) { ((try? pids(children)) ?? []).count == 1 })
    let sleeper = try #require(try pids(children).first)
    let held = try #require(pipe(sleeper, 1))
    #expect(held.hasPrefix("pipe:"))
    // Drain waits the grace (6 s) for the handler's last lines, then lets the pipe go.
    #expect(
      waitUntil(deadline: 60) { !holds(drain.process.processIdentifier, held) },
      "drain still reads \(held)")
    #expect(try container.remaining().isEmpty)
  }

  @Test func `A stopped reader reads nothing more, though output is waiting and its writer open`()
    throws
  {
    // Found by a review: the reader went on reading while the pipe had output, so a process
    // the handler left writing to its stdout as fast as it could (yes(1)) kept the reader
    // thread, its descriptor and every line it read (memory without bound, taken by no one).
    let output = try ChildProcess.pipe()
    let stop = try ChildProcess.pipe()
    defer { close(output.write) }
    let lines = Data(repeating: 0x0A, count: 4096)
    #expect(lines.withUnsafeBytes { write(output.write, $0.baseAddress, $0.count) } == 4096)
    close(stop.write)
    let inbox = CoprocessHandler.Inbox()
    // Returns at once: output waits, but drain is done with the handler.
    CoprocessHandler.read(output.read, stop: stop.read, into: inbox, wakeup: Wakeup())
    let (taken, ended) = inbox.state.withLock { ($0.lines.count, $0.ended) }
    #expect(taken == 0)
    #expect(ended)
  }

  @Test func `An answer for a message the handler does not hold is ignored; the others go on`()
    throws
  {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 2).map { $0.uuidString.lowercased() }
    // It holds both, answers the first twice, then the second.
    let arguments = try handler(
      """
      held = [json.loads(sys.stdin.readline())["id"] for _ in range(2)]
      for i in [held[0], held[0], held[1]]:
          ack(i)
      for line in sys.stdin:
          pass

      """, in: container)
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments() + ["--jobs", "2"] + arguments)
    #expect(
      result.stderr.contains(
        "answered message \(ids[0]), which it does not hold; ignored\n"))
    try expectAllDelivered(result, count: 2, container)
  }

  /// Found by an adversarial session (stop 35): an answer was looked up among every message in
  /// flight, also those whose line was still waiting in drain's outbox behind a full pipe, so
  /// an early "ack" for one deleted it before a byte of it was sent, then sent it anyway.
  @Test func `An answer for a message whose line was not sent yet is ignored`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(maxPayloadBytes: 2_000_000))
    // The first line (1 MB) fills the pipe: no byte of the third is written while the handler
    // reads nothing.
    let big = Data(("\"" + String(repeating: "x", count: 1_000_000) + "\"").utf8)
    let ids = try [big, Data("2".utf8), Data("3".utf8)].map {
      try mailbox.enqueue($0).id.uuidString.lowercased()
    }
    let ready = container.url.appendingPathComponent("ready")
    let go = container.url.appendingPathComponent("go")
    let arguments = try handler(
      """
      while not os.path.exists(\(JSONText.string(ready.path))):
          time.sleep(0.01)
      ack(\(JSONText.string(ids[2])))
      while not os.path.exists(\(JSONText.string(go.path))):
          time.sleep(0.01)
      for line in sys.stdin:
          ack(json.loads(line)["id"])

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--jobs", "3"] + arguments)
    let note = "answered message \(ids[2]), which it does not hold; ignored\n"
    let third = try #require(UUID(uuidString: ids[2]))
    func state() -> AppGroupMailboxEntry.State? {
      (try? mailbox.inspector.entries())?.first { $0.id == third }?.state
    }
    // Claimed, its line waiting behind the first: the handler answers it now.
    #expect(waitUntil(deadline: 60) { state() == .claimed })
    #expect(FileManager.default.createFile(atPath: ready.path, contents: nil))
    // Either the early answer is refused, or (the fault) it deleted the message.
    #expect(waitUntil(deadline: 60) { drain.stderr.contains(note) || state() == nil })
    #expect(drain.stderr.contains(note), "\(drain.stderr)")
    #expect(state() == .claimed)
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    let result = try drain.finish(deadline: 120)
    try expectAllDelivered(result, count: 3, container)
  }

  @Test func `A message recovered and claimed again while its handler has it is not sent twice`()
    throws
  {
    let container = try TemporaryContainer()
    let id = try container.enqueueNumbered(count: 1)[0]
    let received = container.url.appendingPathComponent("received")
    let go = container.url.appendingPathComponent("go")
    // It logs every message line it gets and answers each once the test says so.
    let arguments = try handler(
      """
      for line in sys.stdin:
          i = json.loads(line)["id"]
          with open(\(JSONText.string(received.path)), "a") as f:
              f.write(i + "\\n")
          while not os.path.exists(\(JSONText.string(go.path))):
              time.sleep(0.01)
          ack(i)

      """, in: container)
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments() + ["--claim-timeout", "1", "--jobs", "2"] + arguments)
    let pid = drain.process.processIdentifier
    #expect(waitUntil(deadline: 30) { FileManager.default.fileExists(atPath: received.path) })
    // drain stalls past its lease; another process recovers the claim; drain claims it again.
    drain.signal(SIGSTOP)
    #expect(waitUntil(deadline: 30) { WatchSupport.isStopped(pid: pid) })
    #expect(
      try waitUntil(deadline: 30) {
        try container.remaining().allSatisfy { ($0.leaseExpiresAt ?? .distantFuture) < Date() }
      })
    let maintained = try Mailboxctl.run(["maintain"] + container.arguments())
    #expect(maintained.status == 0, "\(maintained.stderr)")
    #expect(try container.remaining().map(\.state) == [.pending])
    drain.signal(SIGCONT)
    #expect(
      try waitUntil(deadline: 30) {
        try container.remaining().map { [$0.state == .claimed, $0.deliveryCount == 2] }
          == [[true, true]]
      })
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    try expectAllDelivered(try drain.finish(), count: 1, container)
    let lines = try String(contentsOf: received, encoding: .utf8).split(separator: "\n")
    #expect(lines == [Substring(id.uuidString.lowercased())])
  }
}
