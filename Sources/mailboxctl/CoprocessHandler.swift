import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// One run of a `--coprocess` handler: the process (its own process group), the pipe to its
/// stdin (non-blocking) and a thread that reads its stdout into lines.
///
/// The coordinating thread calls every method; the reader thread only fills ``Inbox`` and posts
/// the wake-up.
final class CoprocessHandler {
  let process: ChildProcess
  let startedAt = Date()
  private let input: Int32
  private var inputOpen = true
  private let inbox: Inbox
  /// Whether the greeting was answered and checked.
  var greeted = false
  /// Why it is being stopped (it exited, garbage, a hang, a refused greeting, a shutdown), once
  /// it is.
  var failure: String?
  /// When its output was first seen ended while the process still ran.
  var outputEndedAt: Date?
  /// When the process was first seen exited while its output had not ended.
  var exitedAt: Date?

  /// Lines read from the handler's stdout, and whether its stdout has ended.
  final class Inbox: Sendable {
    let state = Locked<(lines: [Data], ended: Bool, overlong: Bool)>(([], false, false))
  }

  /// Starts the handler and sends drain's greeting.
  /// - Throws: ``CommandFailure`` when the pipes cannot be made or the program not started.
  init(
    executable: URL, arguments: [String], environment: [String: String], greeting: String,
    wakeup: Wakeup
  ) throws(CommandFailure) {
    let toChild = try ChildProcess.pipe()
    let fromChild: (read: Int32, write: Int32)
    do {
      fromChild = try ChildProcess.pipe()
    } catch {
      close(toChild.read)
      close(toChild.write)
      throw error
    }
    do {
      process = try ChildProcess(
        executable: executable.path, arguments: arguments, environment: environment,
        stdin: toChild.read, stdout: fromChild.write, exited: { wakeup.signal() })
    } catch {
      for fd in [toChild.read, toChild.write, fromChild.read, fromChild.write] { close(fd) }
      throw error
    }
    close(toChild.read)
    close(fromChild.write)
    input = toChild.write
    _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
    let inbox = Inbox()
    self.inbox = inbox
    let output = fromChild.read
    Thread.detachNewThread { Self.read(output, into: inbox, wakeup: wakeup) }
    _ = send(greeting + "\n", within: 5)
  }

  /// The reader thread: splits stdout into lines (a line longer than
  /// ``HandlerProtocol/maximumLine`` marks the inbox overlong) until end of file.
  private static func read(_ fd: Int32, into inbox: Inbox, wakeup: Wakeup) {
    var buffer = [UInt8](repeating: 0, count: 65536)
    var partial = Data()
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && Errno.current == .interrupted { continue }
      guard count > 0 else { break }
      var lines: [Data] = []
      var start = 0
      for index in 0..<count where buffer[index] == 0x0A {
        partial.append(contentsOf: buffer[start..<index])
        lines.append(partial)
        partial = Data()
        start = index + 1
      }
      partial.append(contentsOf: buffer[start..<count])
      let overlong = partial.count > HandlerProtocol.maximumLine
      if overlong { partial = Data() }
      inbox.state.withLock { state in
        state.lines += lines
        state.overlong = state.overlong || overlong
      }
      wakeup.signal()
    }
    close(fd)
    inbox.state.withLock { $0.ended = true }
    wakeup.signal()
  }

  /// Takes the lines read so far; `ended` once its stdout is closed (then `lines` holds the last
  /// of them: every line it wrote has been taken), `overlong` when a line was too long.
  func take() -> (lines: [Data], ended: Bool, overlong: Bool) {
    inbox.state.withLock { state in
      let taken = state
      state.lines = []
      return taken
    }
  }

  /// Writes `text` to the handler's stdin, waiting up to `seconds` for room in the pipe.
  /// - Returns: 0, or the errno (EPIPE when it closed its stdin, ETIMEDOUT when it does not
  ///   read), and how many bytes of `text` were written (all of them with 0).
  func send(_ text: String, within seconds: TimeInterval) -> (error: Int32, written: Int) {
    guard inputOpen else { return (EPIPE, 0) }
    let bytes = Array(text.utf8)
    let deadline = Date().addingTimeInterval(seconds)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { raw in
        Glibc.write(input, raw.baseAddress! + offset, raw.count - offset)
      }
      if written >= 0 {
        offset += written
        continue
      }
      let code = Errno.current
      if code == .interrupted { continue }
      guard code == .wouldBlock else { return (code.rawValue, offset) }
      let left = deadline.timeIntervalSinceNow
      if left <= 0 { return (Errno.timedOut.rawValue, offset) }
      var waiter = pollfd(fd: input, events: Int16(POLLOUT), revents: 0)
      _ = poll(&waiter, 1, Int32(min(left, 0.1) * 1000) + 1)
    }
    return (0, offset)
  }

  /// Closes its stdin: a handler that reads end of file exits.
  func closeInput() {
    guard inputOpen else { return }
    inputOpen = false
    close(input)
  }

  /// Closes its stdin and stops its process group (see ``ChildProcess/stop(grace:now:)``).
  func stop(grace: TimeInterval, now: Date = Date()) {
    closeInput()
    process.stop(grace: grace, now: now)
  }

  deinit { closeInput() }
}
