import AppGroupMailbox
import Foundation
import Glibc
import Synchronization

/// One `--exec` handler process and the claim it works on.
///
/// The program gets the message JSON on stdin (then end of file) and these environment
/// variables: `MAILBOX_ID` (UUID, lower case), `MAILBOX_ENQUEUED_AT` (ISO 8601, UTC, to the
/// microsecond), `MAILBOX_DELIVERY_COUNT` (1 on the first delivery), `MAILBOX_MESSAGE_TYPE`
/// (empty when untyped), `MAILBOX_NAMESPACE` and `MAILBOX_CONTAINER`. Its stdout and stderr are
/// mailboxctl's own.
final class HandlerRun: @unchecked Sendable {
  let claim: AppGroupRawMailbox.Claim
  let process: Process
  let startedAt = Date()
  /// The coordinator thread's bookkeeping (only it touches these).
  var lastRenewal = Date()
  var terminateSentAt: Date?
  var killSent = false
  var timedOut = false
  private let exited = ExitFlag()

  /// Whether the process has exited (set from Foundation's termination handler).
  var hasExited: Bool { exited.value.load(ordering: .acquiring) }

  /// True when the handler exited with status 0 (only meaningful once exited).
  var succeeded: Bool {
    process.terminationReason == .exit && process.terminationStatus == 0
  }

  /// A short description of how it ended, for diagnostics.
  var outcome: String {
    if timedOut { return "timed out" }
    switch process.terminationReason {
    case .exit: return "exit status \(process.terminationStatus)"
    case .uncaughtSignal: return "killed by signal \(process.terminationStatus)"
    @unknown default: return "ended"
    }
  }

  /// Starts `executable` for `claim`; `wakeup` is posted when the process exits.
  /// - Throws: what `Process.run()` throws when the program cannot be started.
  init(
    executable: URL, arguments: [String], claim: AppGroupRawMailbox.Claim,
    location: MailboxOptions.Location, wakeup: Wakeup
  ) throws {
    self.claim = claim
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["MAILBOX_ID"] = claim.id.uuidString.lowercased()
    environment["MAILBOX_ENQUEUED_AT"] = ISO8601.format(claim.enqueuedAt)
    environment["MAILBOX_DELIVERY_COUNT"] = String(claim.deliveryCount)
    environment["MAILBOX_MESSAGE_TYPE"] = claim.messageType
    environment["MAILBOX_NAMESPACE"] = location.namespace
    environment["MAILBOX_CONTAINER"] = location.container.path
    process.environment = environment
    let input = Pipe()
    process.standardInput = input
    self.process = process
    process.terminationHandler = { [exited] _ in
      exited.value.store(true, ordering: .releasing)
      wakeup.signal()
    }
    try process.run()
    let payload = claim.payload
    let writer = input.fileHandleForWriting
    Thread.detachNewThread {
      // A handler that does not read its input gets EPIPE here, which is not an error.
      payload.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
          let written = Glibc.write(
            writer.fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
          if written < 0 {
            if errno == EINTR { continue }
            break
          }
          offset += written
        }
      }
      try? writer.close()
    }
  }

  /// Sends SIGTERM once, then SIGKILL once `grace` seconds later (call repeatedly).
  func stop(grace: TimeInterval, now: Date = Date()) {
    guard !hasExited else { return }
    if let sent = terminateSentAt {
      if !killSent, now.timeIntervalSince(sent) >= grace {
        kill(process.processIdentifier, SIGKILL)
        killSent = true
      }
    } else {
      kill(process.processIdentifier, SIGTERM)
      terminateSentAt = now
    }
  }

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

/// Set once by the termination handler's thread, read by the coordinator.
final class ExitFlag: Sendable {
  let value = Atomic<Bool>(false)
}
