import Foundation
import Glibc

/// The NATS JetStream bridge (python/nats_bridge, docs/SCALING.md): `mailboxctl drain
/// --coprocess forward.py` forwarding a mailbox into a stream of a local `nats-server -js`,
/// beside the same client (nats-py) publishing the same messages directly, with as many in
/// flight, to the same server in the same run. Each run is timed from its start (interpreter
/// start-up and connection included, on both sides) to its exit. Skipped, with the reason
/// printed, when nats-server or nats-py (`.build/nats-venv`, installed by scripts/test) is
/// missing.
struct BridgeMeasure: MeasureGroup {
  let context: BenchContext

  static let jobs = 128

  /// The repository (the first parent of this executable holding python/nats_bridge).
  static var repository: URL? {
    var url = URL(fileURLWithPath: Children.executable).deletingLastPathComponent()
    while url.path != "/" {
      if FileManager.default.fileExists(
        atPath: url.appendingPathComponent("python/nats_bridge/forward.py").path)
      {
        return url
      }
      url.deleteLastPathComponent()
    }
    return nil
  }

  static var server: String? {
    ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  func run() throws {
    guard let server = Self.server else { return skip("nats-server is not installed") }
    guard let mailboxctl = MemoryMeasure.mailboxctl else {
      throw BenchError.setup("mailboxctl is not built next to mailbox-bench")
    }
    guard let repository = Self.repository else {
      return skip("python/nats_bridge is not found above \(Children.executable)")
    }
    let python = repository.appendingPathComponent(".build/nats-venv/bin/python").path
    let scripts = repository.appendingPathComponent("python/nats_bridge").path
    guard FileManager.default.isExecutableFile(atPath: python),
      (try? Children.run(["-c", "import nats"], executable: python)) != nil
    else { return skip("nats-py is not installed in \(python) (scripts/test installs it)") }
    let nats = try NATSProcess(server: server, store: workspace.fresh("nats"))
    defer { nats.stop() }
    let created = try Children.wait(
      try Children.spawn(
        [
          "\(scripts)/jetstream.py", "--server", nats.url, "create-stream", "--name", "BENCH",
          "--subject", "bench.>",
        ], executable: python, stdout: "/dev/null"))
    guard created.status == 0 else { throw BenchError.setup("jetstream.py create-stream failed") }
    let count = options.quick ? 3_000 : 10_000
    var run = 0
    for durable in [true, false] {
      let rates = try Rounds.alternate(options.roundCount) {
        run += 1
        return try directRate(python, scripts, nats, count: count, subject: "bench.d\(run)")
      } library: {
        run += 1
        return try forwardRate(
          mailboxctl, python, scripts, nats, count: count, durable: durable,
          subject: "bench.f\(run)")
      }
      report.add(
        .rates(
          rates, group: "bridge", name: "forward: drain --coprocess forward.py (jobs \(Self.jobs))",
          durable: durable, size: 256, against: "nats-py",
          note: "\(count) msgs/run; baseline: nats-py publishing directly, \(Self.jobs) in flight"))
    }
  }

  private func skip(_ reason: String) {
    let line = "bridge: skipped: \(reason)\n"
    FileHandle.standardError.write(Data(line.utf8))
    if !options.json { print("bridge: skipped: \(reason)") }
  }

  /// nats-py publishing `count` messages of 256 bytes directly, `jobs` in flight.
  private func directRate(
    _ python: String, _ scripts: String, _ nats: NATSProcess, count: Int, subject: String
  ) throws -> Double {
    let path = workspace.fresh("direct")
    defer { workspace.remove(path) }
    let body = "\"\(String(repeating: "x", count: 254))\""
    let lines = (0..<count).map { _ in
      "{\"id\":\"\(UUID().uuidString.lowercased())\",\"message\":\(body)}\n"
    }
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let input = path + "/messages.jsonl"
    try Data(lines.joined().utf8).write(to: URL(fileURLWithPath: input))
    let start = nowNanoseconds()
    let pid = try Children.spawn(
      [
        "\(scripts)/jetstream.py", "--server", nats.url, "publish", "--subject", subject,
        "--in-flight", String(Self.jobs), "--input", input,
      ], executable: python, stdout: "/dev/null")
    let (status, _) = try Children.wait(pid)
    let elapsed = nowNanoseconds() - start
    guard status == 0 else { throw BenchError.failed("jetstream.py publish exited with \(status)") }
    return Rounds.rate(count, elapsed)
  }

  /// drain --coprocess forward.py over a fresh mailbox of `count` messages of 256 bytes (the
  /// drain measure's run); every message must be forwarded.
  private func forwardRate(
    _ mailboxctl: String, _ python: String, _ scripts: String, _ nats: NATSProcess,
    count: Int, durable: Bool, subject: String
  ) throws -> Double {
    try DrainMeasure(context: context).drainRate(
      mailboxctl, count: count, durable: durable,
      handler: [
        "--jobs", String(Self.jobs), "--coprocess", python, "\(scripts)/forward.py", "--server",
        nats.url, "--subject", subject,
      ])
  }

  /// The target line: forwarding at least half as fast as publishing directly.
  static func targets(_ rows: [Measurement]) -> [Target] {
    rows.filter { $0.group == "bridge" }.map { row in
      .ratio(
        "bridge forward >= 0.5 of direct nats-py publish (\(row.durability))", row, 0.5,
        why: "a round trip per message between drain and the forwarder; see docs/SCALING.md")
    }
  }
}

/// A `nats-server -js` of the benchmark's own on a free loopback port.
struct NATSProcess {
  let pid: pid_t
  let port: UInt16

  var url: String { "nats://127.0.0.1:\(port)" }

  init(server: String, store: String) throws {
    port = try Self.freePort()
    pid = try Children.spawn(
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store], executable: server,
      stdout: "/dev/null", stderr: "/dev/null")
    let deadline = nowNanoseconds() + 30_000_000_000
    while !Self.accepts(port) {
      guard nowNanoseconds() < deadline else {
        stop()
        throw BenchError.setup("nats-server did not start on port \(port)")
      }
      usleep(20_000)
    }
  }

  func stop() {
    kill(pid, SIGTERM)
    _ = try? Children.wait(pid)
  }

  private static func address(_ port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
  }

  private static func accepts(_ port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var target = address(port)
    return withUnsafePointer(to: &target) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func freePort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError.setup("socket: errno \(errno)") }
    defer { close(fd) }
    var bound = address(0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &bound) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard ok else { throw BenchError.setup("no free port: errno \(errno)") }
    return UInt16(bigEndian: bound.sin_port)
  }
}
