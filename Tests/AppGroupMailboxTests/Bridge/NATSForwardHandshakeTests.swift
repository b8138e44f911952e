import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// forward.py when drain is gone before the handshake ended (found by an adversarial session):
/// drain SIGKILLed after its greeting left forward.py a stdout without a reader, and its answer
/// ended it with a BrokenPipeError traceback; a drain gone before the greeting, with a
/// ProtocolError traceback. It now says so in one line and exits 1.
@Suite struct NATSForwardHandshakeTests {
  /// Computed, not a stored `static let`: LeakSanitizer reports a global `Data` as leaked (it
  /// cannot see the storage through the spare bits of its representation).
  static var greeting: Data {
    Data(
      (#"{"protocol":"mailboxctl-handler","versions":[1],"capabilities":["ack","release","retry","#
        + #""deadletter"],"jobs":4}"# + "\n").utf8)
  }

  /// Runs forward.py with `stdin` as its input and, when `readerGone`, a stdout pipe whose
  /// reading end is closed before it starts (as a SIGKILLed drain leaves it); returns its exit
  /// status and stderr.
  func runForward(stdin: Data, readerGone: Bool) throws -> (status: Int32, stderr: String) {
    let process = Process()
    process.executableURL = NATSBridge.python
    // Nothing listens on port 1: forward.py must end before it connects.
    process.arguments = [
      NATSBridge.script("forward.py"), "--server", "nats://127.0.0.1:1", "--subject", "x",
    ]
    let input = Pipe()
    process.standardInput = input
    let out = Pipe()
    if readerGone { try out.fileHandleForReading.close() }
    process.standardOutput = out
    let err = Pipe()
    process.standardError = err
    try process.run()
    try? out.fileHandleForWriting.close()
    input.fileHandleForWriting.write(stdin)
    try input.fileHandleForWriting.close()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    // 60 s: a bound on a hang, not a latency figure.
    guard waitUntil(deadline: 60, { !process.isRunning }) else {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ProcessTimeout(arguments: process.arguments ?? [])
    }
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: errors, as: UTF8.self))
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A drain gone after its greeting ends forward.py with one line and exit 1`() throws {
    try NATSBridge.requireSetUp()
    let result = try runForward(stdin: Self.greeting, readerGone: true)
    #expect(result.status == 1)
    #expect(
      result.stderr
        == "forward.py: drain is gone before the handshake ended: [Errno 32] Broken pipe\n")
  }

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `A drain gone before its greeting ends forward.py with one line and exit 1`() throws {
    try NATSBridge.requireSetUp()
    let result = try runForward(stdin: Data(), readerGone: false)
    #expect(result.status == 1)
    #expect(result.stderr == "forward.py: stdin ended before drain's greeting (drain is gone)\n")
  }
}
