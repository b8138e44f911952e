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
}
