import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// One run of a `--coprocess` handler: the process (its own process group), the pipe to its
/// stdin (non-blocking, with an outbox of what the pipe has no room for yet) and a thread that
/// reads its stdout into lines.
///
/// The coordinating thread calls every method and never waits for the pipe: what does not fit
/// waits in the outbox until ``flush()`` finds room, so leases are renewed, answers applied and
/// stop signals heard while a handler is slow to read. The reader thread only fills ``Inbox``
/// and posts the wake-up.
final class CoprocessHandler {
  let process: ChildProcess
  let startedAt = Date()
  private let input: Int32
  private var inputOpen = true
  /// Bytes queued for its stdin; those before ``outboxStart`` are written.
  private var outbox: [UInt8] = []
  private var outboxStart = 0
  /// Bytes of its stdin written so far: a message whose line ends at or before this offset
  /// reached the pipe whole.
  private(set) var written = 0
  /// Set by ``finishInput(at:)``: its stdin is closed once everything queued is written.
  private var closing = false
  /// Since when queued bytes have waited without the handler taking any; nil while the outbox
  /// is empty or moving.
  private(set) var blockedSince: Date?
  /// The errno that ended writing to its stdin (EPIPE: it closed it), once one did.
  private(set) var writeError: Int32?
  /// A read end of its stdin's pipe, opened as drain closes the write end (``closeInput()``),
  /// from which ``inputRead`` tells what no process read; -1 before, or when /proc could not
  /// open it.
  private var inputLeft: Int32 = -1
  private let inbox: Inbox
  /// The write end of the reader thread's stop pipe: closing it (``abandonOutput()``) ends the
  /// reader even while a process the handler left behind keeps its stdout open; -1 once closed.
  private var stopReader: Int32
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
    var pipes: [(read: Int32, write: Int32)] = []
    do {
      for _ in 0..<3 { pipes.append(try ChildProcess.pipe()) }
    } catch {
      for pipe in pipes { close(pipe.read); close(pipe.write) }
      throw error
    }
    let (toChild, fromChild, stop) = (pipes[0], pipes[1], pipes[2])
    let inbox = Inbox()
    // The reader first: a handler whose answers nothing would read must never start. From here
    // the reader owns (and closes) the read ends of its two pipes.
    do {
      try PosixThread.start(joinable: false, to: "read the handler's answers") {
        Self.read(fromChild.read, stop: stop.read, into: inbox, wakeup: wakeup)
      }
    } catch {
      for pipe in pipes { close(pipe.read); close(pipe.write) }
      throw error
    }
    do {
      process = try ChildProcess(
        executable: executable.path, arguments: arguments, environment: environment,
        stdin: toChild.read, stdout: fromChild.write, exited: { wakeup.signal() })
    } catch {
      // The reader ends at the end of file of both its pipes.
      for fd in [toChild.read, toChild.write, fromChild.write, stop.write] { close(fd) }
      throw error
    }
    close(toChild.read)
    close(fromChild.write)
    stopReader = stop.write
    input = toChild.write
    _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK)
    self.inbox = inbox
    send(greeting + "\n")
  }

  /// The reader thread: splits stdout into lines (a line longer than
  /// ``HandlerProtocol/maximumLine`` marks the inbox overlong) until end of file, or until the
  /// stop pipe `stop` ends (``abandonOutput()``). At end of file, what follows the last line
  /// feed is a last line. Closes both descriptors when it returns.
  static func read(_ fd: Int32, stop: Int32, into inbox: Inbox, wakeup: Wakeup) {
    var buffer = [UInt8](repeating: 0, count: 65536)
    var partial = Data()
    // The rest of a line already found too long is dropped up to its line break, never read
    // as a line of its own.
    var discarding = false
    var endOfFile = false
    defer { close(stop) }
    while true {
      // Wait for output or the stop (poll(2): end of file and a closed writer both count as
      // readable); the read below then never blocks for ever on a pipe whose writer a process
      // in another session keeps open.
      var watched = [
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&watched, 2, -1)
      if ready < 0 && Errno.current == .interrupted { continue }
      // Stopped: drain is done with this handler, so nothing more it reads would be used (and
      // a process that keeps writing could otherwise keep the thread reading for ever).
      if ready < 0 || watched[1].revents != 0 { break }
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && Errno.current == .interrupted { continue }
      guard count > 0 else {
        endOfFile = count == 0
        break
      }
      var lines: [Data] = []
      var overlong = false
      var start = 0
      for index in 0..<count where buffer[index] == 0x0A {
        if !discarding {
          partial.append(contentsOf: buffer[start..<index])
          if partial.count > HandlerProtocol.maximumLine {
            overlong = true
          } else {
            lines.append(partial)
          }
        }
        discarding = false
        partial = Data()
        start = index + 1
      }
      if !discarding {
        partial.append(contentsOf: buffer[start..<count])
        if partial.count > HandlerProtocol.maximumLine {
          overlong = true
          discarding = true
          partial = Data()
        }
      }
      inbox.state.withLock { state in
        state.lines += lines
        state.overlong = state.overlong || overlong
      }
      wakeup.signal()
    }
    close(fd)
    // A last line without its line feed is a line too: an answer written just before the
    // handler exited counts. (A cut one does not parse: no proper prefix of a JSON object is
    // one, so it is refused as garbage, never read as another answer.)
    let last = endOfFile && !discarding && !partial.isEmpty ? [partial] : []
    inbox.state.withLock { state in
      state.lines += last
      state.ended = true
    }
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

  /// The stream offset just past everything queued: where the next line sent will end minus
  /// its length.
  var queuedEnd: Int { written + outbox.count - outboxStart }

  /// Whether queued bytes still wait for room (its stdin open, no write error).
  var hasPendingOutput: Bool { inputOpen && writeError == nil && outboxStart < outbox.count }

  /// Queues `text` for its stdin and writes what the pipe takes now, without waiting. Nothing
  /// once ``finishInput(at:)`` was called.
  func send(_ text: String) {
    guard inputOpen, writeError == nil, !closing else { return }
    outbox.append(contentsOf: text.utf8)
    flush()
  }

  /// Writes what the pipe takes now (non-blocking write(2)), without waiting: the rest stays
  /// queued for the next call. Records the errno of a failed write (``writeError``) and when
  /// the handler stopped taking bytes (``blockedSince``).
  func flush() {
    guard inputOpen, writeError == nil else { return }
    while outboxStart < outbox.count {
      let count = outbox.withUnsafeBytes { raw in
        Glibc.write(input, raw.baseAddress! + outboxStart, raw.count - outboxStart)
      }
      if count > 0 {
        outboxStart += count
        written += count
        blockedSince = nil
        continue
      }
      let code = Errno.current
      if count < 0 && code == .interrupted { continue }
      if count < 0 && code == .wouldBlock {
        if blockedSince == nil { blockedSince = Date() }
        return
      }
      writeError = count < 0 ? code.rawValue : EIO
      return
    }
    outbox = []
    outboxStart = 0
    blockedSince = nil
    if closing { closeInput() }
  }

  /// Ends its stdin at the stream offset `end` (at least ``written``; the end of the line being
  /// written, so the handler gets whole lines only): what is queued past it is dropped, the rest
  /// written as the pipe takes it (``flush()``), and then its stdin is closed. A handler that
  /// stops reading before that keeps it open until ``closeInput()``.
  func finishInput(at end: Int) {
    guard inputOpen, !closing else { return }
    closing = true
    let kept = min(max(0, end - written), outbox.count - outboxStart)
    outbox.removeSubrange((outboxStart + kept)...)
    flush()
    if writeError != nil { closeInput() }
  }

  /// Closes its stdin: a handler that reads end of file exits.
  /// What is still queued is dropped: the caller puts back the messages whose line had not been
  /// written whole (their end past ``written``).
  ///
  /// First it opens a new read end of the same pipe through /proc/self/fd (proc(5): the entry
  /// opens the pipe itself, as a FIFO; non-blocking, so at once), kept for ``inputRead``. Only
  /// writers keep a reader from end of file, so the handler still sees it.
  func closeInput() {
    guard inputOpen else { return }
    inputOpen = false
    outbox = []
    outboxStart = 0
    blockedSince = nil
    inputLeft = open("/proc/self/fd/\(input)", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    close(input)
  }

  /// How many bytes of its stdin some process read: those written less those still in the pipe
  /// (ioctl FIONREAD, pipe(7)); nil while its input is open or when drain cannot tell. Final once
  /// no process holds the pipe's read end but drain: a message whose line starts at or after it
  /// never left the pipe.
  var inputRead: Int? {
    guard inputLeft >= 0 else { return nil }
    var unread: Int32 = 0
    guard ioctl(inputLeft, UInt(FIONREAD), &unread) == 0 else { return nil }
    return written - Int(unread)
  }

  /// Ends the reader thread once drain is done with this handler, so a process the handler left
  /// in another session holding its stdout keeps neither a thread nor a descriptor of drain's.
  /// Lines not taken by then are dropped.
  func abandonOutput() {
    guard stopReader >= 0 else { return }
    close(stopReader)
    stopReader = -1
  }

  /// Closes its stdin and stops its process group (see ``ChildProcess/stop(grace:now:)``).
  func stop(grace: TimeInterval, now: Date = Date()) {
    closeInput()
    process.stop(grace: grace, now: now)
  }

  deinit {
    closeInput()
    if inputLeft >= 0 { close(inputLeft) }
    abandonOutput()
  }
}
