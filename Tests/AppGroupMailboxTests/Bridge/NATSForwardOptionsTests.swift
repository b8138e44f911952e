import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// forward.py's numeric options (found by an adversarial session): it took any float, so
/// `--publish-timeout 0` answered "retry" for every message JetStream stored (with `--follow`,
/// for ever), and `--retry-after -1`, `nan`, `inf` or `1e10` went to drain as they were.
@Suite struct NATSForwardOptionsTests {
  @Test(
    .enabled(if: NATSBridge.runs, NATSBridge.reason),
    arguments: [
      ("--publish-timeout", "0"), ("--publish-timeout", "-1"), ("--publish-timeout", "nan"),
      ("--publish-timeout", "inf"), ("--publish-timeout", "1e10"), ("--publish-timeout", "600.5"),
      ("--publish-timeout", "five"), ("--retry-after", "-1"), ("--retry-after", "0"),
      ("--retry-after", "nan"), ("--retry-after", "-inf"), ("--retry-after", "1e10"),
    ])
  func `A number of seconds out of bounds ends forward.py with exit 2 before the handshake`(
    option: String, value: String
  ) throws {
    try NATSBridge.requireSetUp()
    // An option that passed would reach the handshake, which fails on the empty stdin.
    let result = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("forward.py"), "--server", "nats://127.0.0.1:1", "--subject", "x",
        "\(option)=\(value)",
      ], stdin: Data()
    ).finish(deadline: 60)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("forward.py: error: argument \(option): "), "\(result.stderr)")
    #expect(!result.stderr.contains("Traceback"))
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason), arguments: ["0", "-1", "many"])
  func `jetstream.py publish refuses an --in-flight that is not from 1 to 65536`(value: String)
    throws
  {
    try NATSBridge.requireSetUp()
    // 0 made a semaphore no publish could ever acquire: the run waited for ever.
    let result = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("jetstream.py"), "--server", "nats://127.0.0.1:1", "publish",
        "--subject", "x", "--in-flight=\(value)",
      ], stdin: Data("{\"id\":\"\(UUID())\",\"message\":1}\n".utf8)
    ).finish(deadline: 60)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains("jetstream.py publish: error: argument --in-flight: "),
      "\(result.stderr)")
  }

  @Test(
    .enabled(if: NATSBridge.runs, NATSBridge.reason),
    arguments: [
      ("--batch", "0"), ("--batch", "4097"), ("--parallel", "0"), ("--parallel", "two"),
      ("--ack-wait", "0"), ("--ack-wait", "inf"), ("--retry-after", "nan"),
      ("--retry-after", "-1"),
    ])
  func `consume.py refuses a number out of its bounds with exit 2`(option: String, value: String)
    throws
  {
    try NATSBridge.requireSetUp()
    // --batch 0 fetched nothing for ever; --parallel 0 enqueued nothing; nan went through.
    let result = try Processes.start(
      NATSBridge.python,
      [
        NATSBridge.script("consume.py"), "--server", "nats://127.0.0.1:1", "--stream", "S",
        "--durable", "d", "\(option)=\(value)",
      ], stdin: Data()
    ).finish(deadline: 60)
    #expect(result.status == 2, "\(result.stderr)")
    #expect(result.stderr.contains("consume.py: error: argument \(option): "), "\(result.stderr)")
  }
}
