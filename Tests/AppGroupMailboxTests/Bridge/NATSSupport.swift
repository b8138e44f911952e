import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// What the NATS JetStream bridge tests need: `nats-server` (Debian) and `nats-py` in the
/// virtual environment `.build/nats-venv` (both installed by scripts/test), and the bridge's
/// Python programs in python/nats_bridge.
enum NATSBridge {
  /// The repository's root directory.
  static var repository: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
  }

  /// The virtual environment's interpreter.
  static var python: URL { repository.appendingPathComponent(".build/nats-venv/bin/python") }

  /// One of the bridge's programs (forward.py, consume.py, jetstream.py).
  static func script(_ name: String) -> String {
    repository.appendingPathComponent("python/nats_bridge/\(name)").path
  }

  /// The `nats-server` executable, from PATH or /usr/sbin (Debian's place), if installed.
  static let server: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return (path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"])
      .map { URL(fileURLWithPath: $0).appendingPathComponent("nats-server") }
      .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }()

  /// Why the bridge cannot be tested here, or nil when it can.
  static let missing: String? = {
    guard server != nil else { return "nats-server is not installed" }
    guard FileManager.default.isExecutableFile(atPath: python.path),
      let check = try? Processes.start(python, ["-c", "import nats"]).finish(deadline: 60),
      check.status == 0
    else { return "nats-py is not installed in \(python.path)" }
    return nil
  }()

  /// Whether the bridge tests run: always under CI (where a missing set-up fails them),
  /// elsewhere only when the set-up is there (else they are skipped with the reason).
  static var runs: Bool { ProcessInfo.processInfo.environment["CI"] == "true" || missing == nil }

  /// The skip reason shown outside CI.
  static let reason: Comment =
    "needs nats-server and nats-py in .build/nats-venv (scripts/test installs both)"

  /// Fails the test when the set-up is missing (only reached under CI, or when it is there).
  static func requireSetUp() throws {
    try #require(missing == nil, "\(missing ?? "")")
  }

  /// Requires the set-up, starts a server storing in `container`, and creates the stream
  /// `MAILBOX` on `subject` with `options` (`create-stream` options). The caller stops it.
  static func serverWithStream(
    in container: TemporaryContainer, subject: String, _ options: [String] = []
  ) throws -> NATSServer {
    try requireSetUp()
    let server = try NATSServer(store: container.url.appendingPathComponent("nats"))
    do {
      try tool(server, ["create-stream", "--name", "MAILBOX", "--subject", subject] + options)
    } catch {
      server.stop()
      throw error
    }
    return server
  }

  /// Runs `jetstream.py arguments` against `server`; returns its stdout (fails on an error).
  /// `deadline` (seconds) bounds a hang: `dump` of 10,000 messages makes one request each, which
  /// took over 120 s on a machine loaded with sanitizer runs.
  @discardableResult
  static func tool(
    _ server: NATSServer, _ arguments: [String], stdin: Data? = nil, deadline: TimeInterval = 120
  ) throws -> String {
    let result = try run(server, arguments, stdin: stdin, deadline: deadline)
    try #require(result.status == 0, "jetstream.py \(arguments.first ?? ""): \(result.stderr)")
    return result.stdout
  }

  /// Runs `jetstream.py arguments` against `server` within `deadline` seconds, whatever its
  /// exit status.
  static func run(
    _ server: NATSServer, _ arguments: [String], stdin: Data? = nil, deadline: TimeInterval = 120
  ) throws -> Finished {
    try Processes.start(
      python, [script("jetstream.py"), "--server", server.url] + arguments, stdin: stdin
    ).finish(deadline: deadline)
  }

  /// consume.py's `--mailboxctl` (`mailboxctl`, this build's by default) and the enqueue
  /// arguments after `--` for namespace `namespace` of `container`, created here (consume.py
  /// refuses a mailbox not created yet, and a `mailboxctl` it cannot run, before it connects).
  static func consumeArguments(
    into container: TemporaryContainer, namespace: String = "in",
    mailboxctl: String = Mailboxctl.url.path
  ) throws -> [String] {
    _ = try container.rawMailbox(namespace: namespace)
    return ["--mailboxctl", mailboxctl, "--"] + container.arguments(namespace: namespace)
  }

  /// `info` as ``info(_:_:)``, but nil, with no issue recorded, when the tool fails: for
  /// polling a consumer that consume.py may not have created yet (on a machine slowed by a
  /// sanitizer, the first polls came before it, and each recorded a failure).
  static func infoIfPresent(_ server: NATSServer, _ arguments: [String]) -> [String: Any]? {
    guard let result = try? run(server, ["info"] + arguments), result.status == 0 else {
      return nil
    }
    return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any]
  }

  /// `jetstream.py info` as a dictionary.
  static func info(_ server: NATSServer, _ arguments: [String]) throws -> [String: Any] {
    let text = try tool(server, ["info"] + arguments)
    return try #require(
      try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  /// Polls `condition` every 0.1 s (the checks list a spool or start a process: polling them
  /// every millisecond would take the CPU from the processes under test) until it holds or
  /// `deadline` seconds pass; returns whether it held.
  static func waitUntil(deadline: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
    let limit = Date().addingTimeInterval(deadline)
    while Date() < limit {
      if try condition() { return true }
      usleep(100_000)
    }
    return try condition()
  }

  /// Polls `condition` until it holds (true) or `progress` has not changed for `stall` seconds
  /// (false): a bound on a hang, not on speed, so a run slowed by a sanitizer or a loaded
  /// machine passes while it moves, and a stuck bridge still fails.
  static func waitUntil(
    stalledFor stall: TimeInterval, progress: () throws -> Int, _ condition: () throws -> Bool
  ) rethrows -> Bool {
    var last = try progress()
    var lastChange = Date()
    while true {
      if try condition() { return true }
      let now = try progress()
      if now != last {
        (last, lastChange) = (now, Date())
      } else if Date().timeIntervalSince(lastChange) > stall {
        return try condition()
      }
      usleep(100_000)
    }
  }

  /// Forwards everything in `namespace` of `container` to `server` on `subject` with one
  /// `mailboxctl drain --coprocess forward.py` (which must exit 0), then returns the stream
  /// `MAILBOX`'s messages as `jetstream.py dump` prints them, oldest first.
  static func forward(
    _ container: TemporaryContainer, namespace: String, to server: NATSServer, subject: String
  ) throws -> [[String: Any]] {
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: namespace) + [
        "--coprocess", python.path, script("forward.py"), "--server", server.url, "--subject",
        subject,
      ])
    #expect(forwarded.status == 0, "\(forwarded.stderr)")
    return try jsonLines(try tool(server, ["dump", "--name", "MAILBOX"]))
  }

  /// Runs consume.py (durable consumer `local`, ack wait 2 s) from `server`'s stream `MAILBOX`
  /// into `namespace` of `container` until the mailbox holds `depth` messages and the consumer
  /// has nothing pending or unacknowledged (at most 120 s), then stops it with SIGTERM. Returns
  /// whether it settled, and its stderr (with the consumer's state when it did not).
  static func consume(
    from server: NATSServer, into container: TemporaryContainer, namespace: String,
    depth: Int
  ) throws -> (settled: Bool, stderr: String) {
    let mailbox = try container.rawMailbox(namespace: namespace)
    let consumer = try Processes.start(
      python,
      [
        script("consume.py"), "--server", server.url, "--stream", "MAILBOX", "--durable",
        "local", "--ack-wait", "2", "--mailboxctl", Mailboxctl.url.path, "--",
      ] + container.arguments(namespace: namespace))
    defer { if consumer.process.isRunning { consumer.signal(SIGKILL) } }
    var state: [String: Any] = [:]
    let settled = try waitUntil(deadline: 120) {
      guard try mailbox.inspector.status().depth == depth else { return false }
      state = try info(server, ["--name", "MAILBOX", "--durable", "local"])
      return state["numPending"] as? Int == 0 && state["numAckPending"] as? Int == 0
    }
    consumer.signal(SIGTERM)
    let finished = try consumer.finish(deadline: 60)
    return (settled, settled ? finished.stderr : "\(state) \(finished.stderr)")
  }

  /// The real-data corpus: every entry of /var/lib/dpkg/status (Debian's package database).
  static func dpkgEntries() throws -> [String] {
    let text = try Data(contentsOf: URL(fileURLWithPath: "/var/lib/dpkg/status"))
    let entries = String(decoding: text, as: UTF8.self).components(separatedBy: "\n\n")
      .filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
    try #require(entries.count > 100)
    return entries
  }
}

/// A `nats-server -js` of a test's own: loopback only, on a free port, its store in a
/// directory of the test; restartable on the same port and store.
final class NATSServer {
  let port: UInt16
  let store: URL
  /// More `nats-server` options (such as `--user` and `--pass`).
  let options: [String]
  private var process: RunningProcess?

  /// The client URL.
  var url: String { "nats://127.0.0.1:\(port)" }

  init(store: URL, options: [String] = []) throws {
    self.store = store
    self.options = options
    port = try Self.freePort()
    try start()
  }

  deinit { stop() }

  /// Starts the server and waits (up to 30 s) until it accepts connections.
  func start() throws {
    let server = try #require(NATSBridge.server)
    process = try Processes.start(
      server, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store.path] + options)
    try #require(waitUntil(deadline: 30) { accepts() }, "nats-server did not start on \(port)")
  }

  /// Stops the server with SIGTERM (it flushes its store) and waits for its exit.
  func stop() {
    guard let running = process else { return }
    process = nil
    running.signal(SIGTERM)
    _ = try? running.finish(deadline: 30)
  }

  /// Whether something accepts a TCP connection on the port.
  private func accepts() -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = Self.loopback(port)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func loopback(_ port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
  }

  /// A port the kernel picks as free on 127.0.0.1 (bound, read back, released).
  private static func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    defer { close(fd) }
    var address = loopback(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    try #require(bound)
    return UInt16(bigEndian: address.sin_port)
  }
}
