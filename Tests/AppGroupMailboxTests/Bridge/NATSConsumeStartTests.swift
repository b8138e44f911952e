import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// consume.py's start and end (found by adversarial sessions): while the first connection
/// failed it ignored SIGTERM (systemd waited out its stop timeout and killed it), a stream that
/// does not exist ended it with a Python traceback, and a consumer deleted under it went unsaid.
@Suite struct NATSConsumeStartTests {
  /// Starts consume.py from `url`'s stream `stream` into namespace `in`, its stderr going to a
  /// file of `container` (read while it runs).
  func startConsume(
    _ url: String, stream: String, in container: TemporaryContainer,
    mailboxctl: String = Mailboxctl.url.path, options: [String] = [],
    enqueueArguments: [String] = []
  ) throws -> (process: Process, stderr: URL) {
    let stderr = container.url.appendingPathComponent("consume.stderr")
    #expect(FileManager.default.createFile(atPath: stderr.path, contents: nil))
    let enqueue = try NATSBridge.consumeArguments(into: container, mailboxctl: mailboxctl)
    let (process, _, _) = Processes.prepare(
      NATSBridge.python,
      [
        NATSBridge.script("consume.py"), "--server", url, "--stream", stream, "--durable",
        "local",
      ] + options + enqueue + enqueueArguments, environment: [:])
    process.standardError = try FileHandle(forWritingTo: stderr)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    return (process, stderr)
  }

  func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }

  /// Writes an executable shell script `name` into `container`, standing in for mailboxctl:
  /// `body(path)` after the `#!/bin/sh` line, `path` being the script's own. Returns the path.
  func standIn(_ name: String, in container: TemporaryContainer, body: (String) -> String)
    -> String
  {
    let path = container.url.appendingPathComponent(name).path
    let script = "#!/bin/sh\n" + body(path) + "\n"
    #expect(
      FileManager.default.createFile(
        atPath: path, contents: Data(script.utf8), attributes: [.posixPermissions: 0o755]))
    return path
  }

  /// Whether the durable consumer `local` of stream `MAILBOX` exists (consume.py is consuming);
  /// asked with `Processes` directly, so a failure while polling records no issue.
  func consumerExists(on server: NATSServer) -> Bool {
    let info = try? Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("jetstream.py"), "--server", server.url, "info", "--name", "MAILBOX",
        "--durable", "local",
      ]
    ).finish(deadline: 30)
    return info?.status == 0
  }

  /// SIGHUP (a closed session) stops it like SIGTERM, as it stops mailboxctl; before, it killed
  /// consume.py with the default action (exit status 129 in a shell).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: [SIGTERM, SIGHUP, SIGINT])
  func `A stop signal ends consume.py while its first connection is still failing`(
    signal: Int32
  ) throws {
    let container = try TemporaryContainer()
    try NATSBridge.requireSetUp()
    // A port a server just left: connections to it are refused.
    let server = try NATSServer(store: container.url.appendingPathComponent("nats"))
    server.stop()
    let (process, stderr) = try startConsume(server.url, stream: "MAILBOX", in: container)
    #expect(waitUntil(deadline: 60) { text(stderr).contains("ConnectionRefusedError") })
    expectStopped(process, by: signal, stderr: stderr)
  }

  /// Expects `process` to end on its own within 60 s (a correctness bound: it waited for good)
  /// with `status` and exactly one of `lines` on `stderr`.
  func expectEnded(_ process: Process, status: Int32, stderr: URL, saying lines: String...) {
    let ended = waitUntil(deadline: 60) { !process.isRunning }
    if !ended { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    #expect(ended, "\(text(stderr))")
    #expect(process.terminationStatus == status)
    #expect(lines.contains(text(stderr)), "\(text(stderr))")
  }

  /// Sends `signal` to `process` and expects it to end within 30 s with exit 0 and no Python
  /// traceback on `stderr`. 30 s: a correctness bound (it ignored the signal for good, or hung
  /// closing), not a latency figure.
  func expectStopped(_ process: Process, by signal: Int32, stderr: URL) {
    kill(process.processIdentifier, signal)
    let ended = waitUntil(deadline: 30) { !process.isRunning }
    if !ended { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    #expect(ended, "\(text(stderr))")
    #expect(process.terminationReason == .exit)
    #expect(process.terminationStatus == 0, "\(text(stderr))")
    #expect(!text(stderr).contains("Traceback"), "\(text(stderr))")
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A stream that does not exist is named and ends consume.py with exit 78`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let (process, stderr) = try startConsume(server.url, stream: "NOPE", in: container)
    expectEnded(
      process, status: 78, stderr: stderr,
      saying:
        "consume.py: cannot consume from stream NOPE, durable consumer local: stream not found\n")
  }

  /// Found by an adversarial review: a stop signal while the server was gone ended consume.py
  /// with a ConnectionResetError traceback from closing the connection, and exit 1 (a systemd
  /// unit marked failed).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A stop signal after the server went away ends consume.py with exit 0`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    let (process, stderr) = try startConsume(server.url, stream: "MAILBOX", in: container)
    #expect(waitUntil(deadline: 60) { consumerExists(on: server) })
    server.stop()
    // It noticed: it tried to connect again, at least twice.
    #expect(waitUntil(deadline: 60) { text(stderr).contains(" more like it)") })
    expectStopped(process, by: SIGTERM, stderr: stderr)
  }

  /// Found by adversarial reviews: a durable consumer deleted while consume.py ran made every
  /// fetch time out, as an idle stream's do, so consume.py waited for good and said nothing;
  /// and one made again as a push consumer was never checked again (only at the start), so
  /// its fetches brought nothing, for good.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: [false, true])
  func `A durable consumer deleted or made again otherwise ends consume.py with exit 78`(
    madeAgain: Bool
  ) throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let (process, stderr) = try startConsume(server.url, stream: "MAILBOX", in: container)
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    #expect(waitUntil(deadline: 60) { consumerExists(on: server) })
    try NATSBridge.tool(server, ["delete-consumer", "--name", "MAILBOX", "--durable", "local"])
    if madeAgain {
      try NATSBridge.tool(
        server,
        ["create-consumer", "--name", "MAILBOX", "--durable", "local", "--push", "deliver.x"])
    }
    // 60 s: a correctness bound (it waited for good); it asks every 10 s. The check may fall
    // between the deletion and the new consumer (about a second apart): then it names the
    // deletion.
    let prefix = "consume.py: cannot consume from stream MAILBOX, durable consumer local: "
    let deleted = prefix + "consumer not found (deleted while consuming)\n"
    let otherwise =
      prefix + "it was made again with other settings while consuming: it is a push consumer; "
      + "delete it or give another --durable\n"
    if madeAgain {
      expectEnded(process, status: 78, stderr: stderr, saying: otherwise, deleted)
    } else {
      expectEnded(process, status: 78, stderr: stderr, saying: deleted)
    }
  }

  /// Found by an adversarial review: a --mailboxctl that is not there failed every enqueue, and
  /// each message came back after --ack-wait for ever; one with the execute bit whose `#!`
  /// interpreter is not there ended it with a traceback (a second review).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: [false, true])
  func `A --mailboxctl that cannot run is named and ends consume.py with exit 78`(
    exists: Bool
  ) throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let path = container.url.appendingPathComponent("mailboxctl").path
    if exists {
      #expect(
        FileManager.default.createFile(
          atPath: path, contents: Data("#!/no/such/interpreter\n".utf8),
          attributes: [.posixPermissions: 0o755]))
    }
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: path)
    let why = exists ? "No such file or directory" : "not found, or not an executable file"
    expectEnded(
      process, status: 78, stderr: stderr,
      saying: "consume.py: cannot run --mailboxctl \(path): \(why)\n")
  }

  /// What consume.py says of arguments after `--` that would refuse, change or lose messages:
  /// only where the mailbox is and how each enqueue goes may be given, with values
  /// `mailboxctl enqueue --dry-run` takes.
  static let refusedArguments: [([String], String)] = {
    let allowed =
      "consume.py: the arguments after -- may hold only --container, --app-group, --namespace, "
      + "--relaxed, --wait, --delay, --not-before (consume.py gives each message's --id, "
      + "--enqueued-at, --type, --payload-version and --priority itself), not "
    let mailboxctl = "consume.py: mailboxctl enqueue refuses the arguments after --: "
    return [
      (["--bogus"], allowed + "--bogus\n"),
      (["--help"], allowed + "--help\n"),
      (["--data={}"], allowed + "--data\n"),
      (["--priority", "3"], allowed + "--priority\n"),
      (["--lines"], allowed + "--lines\n"),
      (
        ["--wait"],
        mailboxctl + "mailboxctl: error: enqueue: --wait needs a value (--wait SECONDS; write "
          + "--wait=SECONDS for a value that begins with '-')\n"
          + "Run 'mailboxctl enqueue --help' for usage.\n"
      ),
      (
        ["--delay", "100000"],
        mailboxctl + "mailboxctl: error: enqueue: the message would expire before it is due "
          + "(the mailbox's message lifetime is 86400 s); nothing was enqueued ('mailboxctl "
          + "config --message-lifetime SECONDS' raises it)\n"
      ),
    ]
  }()

  /// Found by adversarial reviews: a wrong argument after `--` made every enqueue exit 64, and
  /// each message came back every --retry-after seconds, for ever; `--help` printed the usage
  /// and exited 0 for every message, so each was acknowledged and lost; `--data` stored the same
  /// message for every one; a `--delay` past the message lifetime made every enqueue exit 65,
  /// so every message was terminated. Each is refused at the start, before anything is taken.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: refusedArguments)
  func `Arguments that would refuse, change or lose messages end consume.py with exit 78`(
    arguments: [String], line: String
  ) throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let ids = (1...3).map { _ in UUID().uuidString.lowercased() }
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data(ids.map { #"{"id":"\#($0)","message":1}"# + "\n" }.joined().utf8))
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, enqueueArguments: arguments)
    expectEnded(process, status: 78, stderr: stderr, saying: line)
    // Nothing was taken: the next run with the right arguments enqueues every message.
    let (settled, consumed) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 3)
    #expect(settled, "\(consumed)")
    let pending = try container.rawMailbox(namespace: "in").inspector.entries(in: [.pending])
    #expect(Set(pending.map { $0.id?.uuidString.lowercased() }) == Set(ids))
  }

  /// Found by a review: arguments the start accepted can refuse every message later, when the
  /// mailbox's settings change under them (a message lifetime lowered below `--delay`); every
  /// message was then terminated as bad data. An enqueue refused as bad data while the same
  /// check fails now gives the message back and ends consume.py as at the start.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `Settings that come to refuse every message stop consume.py and terminate none`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, enqueueArguments: ["--delay", "3000"])
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let mailbox = try container.rawMailbox(namespace: "in")
    let first = UUID().uuidString.lowercased()
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data((#"{"id":"\#(first)","message":1}"# + "\n").utf8))
    #expect(
      waitUntil(deadline: 60) { (try? mailbox.inspector.counts().delayed) == 1 },
      "\(text(stderr))")
    let lowered = try Mailboxctl.run(
      ["config"] + container.arguments(namespace: "in") + ["--message-lifetime", "1000"])
    #expect(lowered.status == 0, "\(lowered.stderr)")
    let second = UUID().uuidString.lowercased()
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data((#"{"id":"\#(second)","message":2}"# + "\n").utf8))
    expectEnded(
      process, status: 78, stderr: stderr,
      saying: "consume.py: mailboxctl enqueue refuses the arguments after --: mailboxctl: "
        + "error: enqueue: the message would expire before it is due (the mailbox's message "
        + "lifetime is 1000 s); nothing was enqueued ('mailboxctl config --message-lifetime "
        + "SECONDS' raises it)\n")
    // The second message was given back, not terminated: a run without --delay enqueues it.
    let (settled, consumed) = try NATSBridge.consume(
      from: server, into: container, namespace: "in", depth: 2)
    #expect(settled, "\(consumed)")
    let pending = try mailbox.inspector.entries(in: [.pending])
    #expect(pending.map { $0.id?.uuidString.lowercased() } == [second])
  }

  /// Found by two reviews of the first fixes: a message whose headers add an option an older
  /// mailboxctl does not know (exit 64) stopped the whole consumer (then three such in a row
  /// did). It is given back for later; the others go on.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A message an older mailboxctl refuses waits and the others go on`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    // A mailboxctl that does not know --priority, and says so before it reads the message, as
    // mailboxctl's own usage errors do. consume.py wrote the message into a pipe, which then
    // broke, and asyncio printed "Future exception was never retrieved" and a traceback for
    // each (the messages are larger than a pipe holds); it hands a file in memory now.
    let older = standIn("older-mailboxctl", in: container) { path in
      """
      for argument in "$@"; do
        [ "$argument" = --priority ] && {
          echo refused >> '\(path).refusals'; echo "unknown option '--priority'" >&2; exit 64; }
      done
      exec '\(Mailboxctl.url.path)' "$@"
      """
    }
    let ids = (1...6).map { _ in UUID().uuidString.lowercased() }
    let large = String(repeating: "x", count: 200_000)
    let lines = ids.enumerated().map { index, id in
      index < 3
        ? #"{"id":"\#(id)","message":"\#(large)","headers":{"Mailbox-Priority":"9"}}"#
        : #"{"id":"\#(id)","message":1}"#
    }
    try NATSBridge.tool(
      server, ["publish", "--subject", "mailbox.jobs"],
      stdin: Data(lines.map { $0 + "\n" }.joined().utf8))
    let (process, stderr) = try startConsume(
      server.url, stream: "MAILBOX", in: container, mailboxctl: older)
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let mailbox = try container.rawMailbox(namespace: "in")
    #expect(
      waitUntil(deadline: 60) {
        (try? mailbox.inspector.entries(in: [.pending]).count) == 3
          && text(stderr).contains("(exit 64), retrying in 2 s: unknown option '--priority'")
      }, "\(text(stderr))")
    // Five refusals of each (about 8 s at one try every 2 s): the broken pipe's traceback came
    // with about three tries in four.
    let refusals = URL(fileURLWithPath: older + ".refusals")
    #expect(
      waitUntil(deadline: 60) { text(refusals).split(separator: "\n").count >= 15 },
      "\(text(stderr))")
    let pending = try mailbox.inspector.entries(in: [.pending])
    #expect(Set(pending.map { $0.id?.uuidString.lowercased() }) == Set(ids[3...]))
    #expect(process.isRunning, "\(text(stderr))")
    #expect(!text(stderr).contains("never retrieved"), "\(text(stderr))")
    expectStopped(process, by: SIGTERM, stderr: stderr)
  }

  /// Found by a new operator's run: into a mailbox not created yet, `enqueue` created it with
  /// the default bounds, and consume.py terminated in JetStream every message over 64 KiB or
  /// older than a day. It refuses such a mailbox before it connects.
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A mailbox not created yet ends consume.py with exit 78 before it connects`() throws {
    try NATSBridge.requireSetUp()
    let container = try TemporaryContainer()
    let mailbox = container.url.appendingPathComponent("AppGroupMailbox/never").path
    // No server: it must not get as far as connecting.
    let result = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("consume.py"), "--server", "nats://127.0.0.1:1", "--stream", "S",
        "--durable", "d", "--mailboxctl", Mailboxctl.url.path, "--",
      ] + container.arguments(namespace: "never")
    ).finish(deadline: 60)
    #expect(result.status == 78, "\(result.stderr)")
    #expect(
      result.stderr
        == "consume.py: cannot enqueue into the mailbox: mailboxctl: error: status: no such "
        + "mailbox: \(mailbox) ('mailboxctl namespaces --container \(container.url.path)' lists "
        + "the mailboxes there; 'mailboxctl create' makes one)\n")
    #expect(!FileManager.default.fileExists(atPath: mailbox))
  }
}
