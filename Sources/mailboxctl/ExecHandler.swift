import AppGroupMailbox
import Foundation
import Glibc
import Synchronization

/// One `--exec` handler process and the claim it works on.
///
/// The program gets the message JSON on stdin (then end of file) and these environment
/// variables: `MAILBOX_ID` (UUID, lower case), `MAILBOX_ENQUEUED_AT` (ISO 8601, UTC, to the
/// microsecond), `MAILBOX_DELIVERY_COUNT` (1 on the first delivery), `MAILBOX_MESSAGE_TYPE`
/// (empty when untyped), `MAILBOX_PAYLOAD_VERSION` (1 unless the producer recorded another),
/// `MAILBOX_PRIORITY` (the level, 0 to 9), `MAILBOX_NAMESPACE` and `MAILBOX_CONTAINER`. Its stdout and stderr are
/// mailboxctl's own. It runs in its own process group (see ``ChildProcess``); its exit counts
/// as soon as it exits, whatever it left running.
final class HandlerRun {
  let claim: AppGroupRawMailbox.Claim
  let process: ChildProcess
  let startedAt = Date()
  /// The coordinator thread's bookkeeping (only it touches these).
  var lastRenewal = Date()
  var timedOut = false

  /// Whether the process has exited.
  var hasExited: Bool { process.hasExited }

  /// True when the handler exited with status 0 (only meaningful once exited).
  var succeeded: Bool { process.succeeded }

  /// A short description of how it ended, for diagnostics.
  var outcome: String { timedOut ? "timed out" : process.outcome }

  /// Starts `executable` for `claim`; `wakeup` is posted when the process exits.
  /// - Throws: ``CommandFailure`` when the program cannot be started.
  init(
    executable: URL, arguments: [String], claim: AppGroupRawMailbox.Claim,
    location: MailboxOptions.Location, wakeup: Wakeup
  ) throws(CommandFailure) {
    self.claim = claim
    var environment = ProcessInfo.processInfo.environment
    environment["MAILBOX_ID"] = claim.id.uuidString.lowercased()
    environment["MAILBOX_ENQUEUED_AT"] = ISO8601.format(claim.enqueuedAt)
    environment["MAILBOX_DELIVERY_COUNT"] = String(claim.deliveryCount)
    environment["MAILBOX_MESSAGE_TYPE"] = claim.messageType
    environment["MAILBOX_PAYLOAD_VERSION"] = String(claim.payloadVersion)
    environment["MAILBOX_PRIORITY"] = String(claim.priority)
    environment["MAILBOX_NAMESPACE"] = location.namespace
    environment["MAILBOX_CONTAINER"] = location.container.path
    let input = try ChildProcess.pipe()
    do {
      process = try ChildProcess(
        executable: executable.path, arguments: arguments, environment: environment,
        stdin: input.read, stdout: nil, exited: { wakeup.signal() })
    } catch {
      close(input.read)
      close(input.write)
      throw error
    }
    close(input.read)
    feed = PayloadFeed(fd: input.write, payload: claim.payload)
  }

  /// The thread that writes the message to the handler's stdin.
  private let feed: PayloadFeed

  /// Ends the writing of the handler's input and waits for its thread: call once the handler
  /// has exited, before its result counts, so no writer outlives the claim (a process that
  /// exits with one still running leaks its copy of the payload). Waits at most about 0.1 s, for
  /// a write(2) blocked on a pipe a process the handler left running holds open and does not read.
  func finishInput() { feed.finish() }

  /// Stops the handler's process group (see ``ChildProcess/stop(grace:now:)``).
  func stop(grace: TimeInterval, now: Date = Date()) {
    process.stop(grace: grace, now: now)
  }

  /// Whether it was stopped by drain (a timeout or a stop request).
  var stopRequested: Bool { process.stopRequested }

  /// Finds `command` as execvp(3) would: a name with a `/` as given, else the first executable
  /// file of that name in `$PATH`. Nil when none is found.
  static func resolve(_ command: String) -> URL? {
    if command.contains("/") {
      return access(command, X_OK) == 0 ? URL(fileURLWithPath: command) : nil
    }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
      let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + command
      var info = stat()
      if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
        access(candidate, X_OK) == 0
      {
        return URL(fileURLWithPath: candidate)
      }
    }
    return nil
  }
}

/// Writes a payload to a handler's stdin on a thread of its own, so a handler that reads slowly
/// or not at all never blocks the drain. The thread is joinable: ``finish()`` returns once it
/// has ended and dropped its copy of the payload.
private final class PayloadFeed: Sendable {
  private let fd: Int32
  private let payload: Data
  private let abandoned = Atomic<Bool>(false)
  private let thread = Mutex<pthread_t?>(nil)

  /// Starts writing `payload` to `fd` (the write end of the handler's stdin pipe, which it
  /// closes when done). The descriptor is made non-blocking so ``finish()`` can end the thread.
  /// When no thread can be started (pthread_create(3) fails, EAGAIN), it closes `fd` at once:
  /// the handler reads end of file.
  init(fd: Int32, payload: Data) {
    self.fd = fd
    self.payload = payload
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    let context = Unmanaged.passRetained(self)
    var handle = pthread_t()
    let started = pthread_create(
      &handle, nil,
      { raw in
        guard let raw else { return nil }
        let feed = Unmanaged<PayloadFeed>.fromOpaque(raw).takeRetainedValue()
        feed.write()
        return nil
      }, context.toOpaque())
    if started == 0 {
      thread.withLock { $0 = handle }
    } else {
      context.release()
      close(fd)
    }
  }

  private func write() {
    // A handler that does not read its input gets EPIPE here, which is not an error.
    _ = FileDescriptorWriter.writeAll(
      fd, payload, until: { abandoned.load(ordering: .acquiring) })
    close(fd)
  }

  /// Tells the thread to give up what is left and waits until it has ended (pthread_join(3)).
  /// Waits at most about 0.1 s once the reader is gone or has stopped reading.
  func finish() {
    abandoned.store(true, ordering: .releasing)
    guard
      let handle = thread.withLock({ value in
        defer { value = nil }; return value
      })
    else {
      return
    }
    pthread_join(handle, nil)
  }
}

/// Writes whole buffers to a descriptor with write(2), retrying after EINTR.
enum FileDescriptorWriter {
  /// Writes every byte of `data` to `fd`; returns 0 on success, else the errno of the failed
  /// write(2) (EPIPE when the reader is gone). On a non-blocking descriptor (a parent may hand
  /// one over as stdout) it waits for room with poll(2) instead of failing with EAGAIN.
  /// `stoppable`: once a stop signal was received (``Signals/stopReceived``), it writes no more
  /// and returns EINTR, also when the signal interrupted a write(2) blocked on a full pipe: the
  /// caller puts back what was not written whole. `until`: checked before each write(2) and
  /// after each wait for room; once it returns true, it writes no more and returns EINTR.
  static func writeAll(
    _ fd: Int32, _ data: some DataProtocol, stoppable: Bool = false, until: () -> Bool = { false }
  ) -> Int32 {
    let bytes = Array(data)
    var offset = 0
    while offset < bytes.count {
      if stoppable && Signals.stopReceived || until() { return EINTR }
      let written = bytes.withUnsafeBytes { raw in
        Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
      }
      if written < 0 {
        let code = Errno.current
        if code == .interrupted { continue }
        if code == .wouldBlock {
          var waiter = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
          _ = poll(&waiter, 1, 100)
          continue
        }
        return code.rawValue
      }
      offset += written
    }
    return 0
  }
}
