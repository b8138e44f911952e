import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The bridge's first connection (found by an adversarial session): common.connect asked
/// nats-py to reconnect for ever, which it does for the first connection too, so it never
/// raised: `jetstream.py` against a server that is down hung printing ConnectionRefusedError
/// instead of exiting 1, and forward.py's "cannot connect yet" path never ran.
@Suite struct NATSConnectTests {
  /// A server URL whose port a server just left: connections to it are refused.
  func refusedURL(in container: TemporaryContainer) throws -> String {
    try NATSBridge.requireSetUp()
    let server = try NATSServer(store: container.url.appendingPathComponent("nats"))
    server.stop()
    return server.url
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `jetstream.py exits 1 with the reason when no server answers`() throws {
    let container = try TemporaryContainer()
    let url = try refusedURL(in: container)
    // 60 s: a bound on the hang (it never ended), not a latency figure.
    let result = try Processes.start(
      NATSBridge.python,
      [NATSBridge.script("jetstream.py"), "--server", url, "info", "--name", "H1"]
    ).finish(deadline: 60)
    #expect(result.status == 1)
    #expect(result.stdout.isEmpty)
    #expect(
      result.stderr.contains(
        "jetstream.py info: ConnectionError: no NATS server answers at \(url): "
          + "ConnectionRefusedError"), "\(result.stderr)")
    #expect(!result.stderr.contains("Traceback"))
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `forward.py answers retry while it cannot connect, and says so`() throws {
    let container = try TemporaryContainer()
    let url = try refusedURL(in: container)
    let outgoing = try container.rawMailbox(namespace: "out")
    let ids = try (1...3).map { try outgoing.enqueue(Data("\($0)".utf8)).id }
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: "out") + [
        "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"), "--server", url,
        "--subject", "mailbox.jobs",
      ])
    #expect(forwarded.status == 0, "\(forwarded.stderr)")
    #expect(
      forwarded.stderr.contains(
        "forward.py: cannot connect yet: ConnectionError: no NATS server answers at \(url)"),
      "\(forwarded.stderr)")
    #expect(forwarded.stderr.contains("ConnectionError: not connected to NATS"))
    // Nothing was stored anywhere, so every message stays, waiting for its retry.
    let status = try outgoing.inspector.status()
    #expect(status.depth == ids.count)
    #expect(status.delayed == ids.count)
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `forward.py ends with exit 78 on an error that trying again cannot mend`() throws {
    let container = try TemporaryContainer()
    let url = try refusedURL(in: container)
    let outgoing = try container.rawMailbox(namespace: "out")
    for number in 1...3 { try outgoing.enqueue(Data("\(number)".utf8)) }
    // A credentials file that is not there (or nats-py's nkeys module missing for --creds):
    // before, it was logged as "cannot connect yet" and tried for ever.
    let missing = container.url.appendingPathComponent("missing.creds").path
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: "out") + [
        "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"), "--server", url,
        "--creds", missing, "--subject", "mailbox.jobs",
      ])
    // Said before the handshake (it was said after it, once per restart, five times): drain
    // gives up at once, and nothing was delivered.
    #expect(forwarded.status == 69, "\(forwarded.stderr)")
    #expect(
      forwarded.stderr.components(
        separatedBy: "forward.py: cannot connect: OSError: cannot "
          + "read the --creds file \(missing): No such file or directory\n"
      ).count == 2,
      "\(forwarded.stderr)")
    #expect(
      forwarded.stderr.hasSuffix(
        "mailboxctl: error: drain: --coprocess: the handler did not answer the greeting (exit "
          + "status 78); giving up\n"), "\(forwarded.stderr)")
    #expect(!forwarded.stderr.contains("cannot connect yet"), "\(forwarded.stderr)")
    #expect(!forwarded.stderr.contains("Traceback"), "\(forwarded.stderr)")
    let waiting = try outgoing.inspector.entries(in: [.pending])
    #expect(waiting.map(\.deliveryCount) == [0, 0, 0])
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `consume.py ends a connection error trying again cannot mend with one line and exit 78`()
    throws
  {
    let container = try TemporaryContainer()
    let url = try refusedURL(in: container)
    let missing = container.url.appendingPathComponent("missing.creds").path
    // 60 s: a bound on a hang (the error must end it), not a latency figure.
    let result = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("consume.py"), "--server", url, "--creds", missing, "--stream", "S",
        "--durable", "d",
      ] + NATSBridge.consumeArguments(into: container)
    ).finish(deadline: 60)
    #expect(result.status == 78, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("consume.py: cannot connect: "), "\(result.stderr)")
    #expect(!result.stderr.contains("Traceback"), "\(result.stderr)")
  }

  /// Runs consume.py on stream S, durable consumer d, with `arguments`; 60 s is a bound on
  /// retrying for ever, not a latency figure.
  func consume(_ arguments: [String]) throws -> Finished {
    let container = try TemporaryContainer()
    return try Processes.start(
      NATSBridge.python,
      [NATSBridge.script("consume.py")] + arguments + ["--stream", "S", "--durable", "d"]
        + NATSBridge.consumeArguments(into: container)
    ).finish(deadline: 60)
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `consume.py refuses a server URL whose scheme is not NATS with exit 78`() throws {
    // It took the URL for a host name.
    let result = try consume(["--server", "nats://127.0.0.1:1,http://u:secret@host:4222"])
    #expect(result.status == 78, "\(result.stderr)")
    #expect(
      result.stderr
        == "consume.py: cannot connect: ValueError: http://u:***@host:4222 is not a NATS server "
        + "URL: the scheme must be nats, tls, ws or wss\n")
  }

  /// Before, a URL without a scheme was shown whole, and a password holding `@` or `/` was
  /// shown from that character on (found by an adversarial review).
  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A password or token in a server URL is shown as ***, with or without a scheme`() throws {
    let urls = [
      "alice:secretpw@127.0.0.1:14299", "nats://alice:sec@ret@127.0.0.1:14222",
      "http://bob:hun/ter2@x", "nats://token@h:1", "nats://h:1", "h:4222",
    ]
    let script =
      "import sys; sys.path.insert(0, sys.argv[1])\n"
      + "from nats_bridge.common import redacted\n"
      + "for url in sys.argv[2:]: print(redacted(url))"
    let python = URL(fileURLWithPath: NATSBridge.script("common.py")).deletingLastPathComponent()
      .deletingLastPathComponent().path
    let result = try Processes.start(NATSBridge.python, ["-c", script, python] + urls)
      .finish(deadline: 60)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(
      result.stdout.split(separator: "\n") == [
        "alice:***@127.0.0.1:14299", "nats://alice:***@127.0.0.1:14222", "http://bob:***@x",
        "nats://***@h:1", "nats://h:1", "h:4222",
      ])
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `consume.py names a --creds file it cannot read before anything else`() throws {
    let container = try TemporaryContainer()
    let missing = container.url.appendingPathComponent("missing.creds").path
    let result = try consume(["--server", "nats://127.0.0.1:1", "--creds", missing])
    #expect(result.status == 78, "\(result.stderr)")
    #expect(
      result.stderr
        == "consume.py: cannot connect: OSError: cannot read the --creds file \(missing): "
        + "No such file or directory\n")
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `consume.py ends a refused authorization with exit 78 and never logs the password`()
    throws
  {
    try NATSBridge.requireSetUp()
    let container = try TemporaryContainer()
    let server = try NATSServer(
      store: container.url.appendingPathComponent("nats"),
      options: ["--user", "good", "--pass", "secret"])
    let url = server.url.replacingOccurrences(of: "nats://", with: "nats://bad:wrong@")
    // 60 s: a bound on retrying for ever (it did), not a latency figure.
    let result = try Processes.start(
      NATSBridge.python,
      [NATSBridge.script("consume.py"), "--server", url, "--stream", "S", "--durable", "d"]
        + NATSBridge.consumeArguments(into: container)
    ).finish(deadline: 60)
    #expect(result.status == 78, "\(result.stderr)")
    #expect(
      result.stderr.contains(
        "cannot connect: PermissionError: NATS refused the authorization at "
          + "nats://bad:***@127.0.0.1:\(server.port)"), "\(result.stderr)")
    #expect(!result.stderr.contains("wrong"), "\(result.stderr)")
    #expect(!result.stderr.contains("cannot connect yet"), "\(result.stderr)")
  }
}
