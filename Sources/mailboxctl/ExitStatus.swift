import AppGroupMailbox
import Glibc

/// Exit statuses from sysexits(3) (`/usr/include/sysexits.h`), plus 130 for SIGINT.
enum ExitStatus: Int32, Sendable {
  case success = 0
  /// EX_USAGE: a wrong command line.
  case usage = 64
  /// EX_DATAERR: input that is not JSON, a bad date, a message too large, a message `cancel`
  /// found in quarantine, or messages `migrate` left in place as older than the lifetime.
  case dataError = 65
  /// EX_NOINPUT: no such mailbox (also when it is removed while watched), no such message, a
  /// claim token whose claim no longer exists, or standard input cannot be read.
  case noInput = 66
  /// EX_UNAVAILABLE: the container or the mailbox cannot be opened or reached (permission
  /// denied...), the namespace directory holds files of the old format that `migrate` has not
  /// converted, the --exec or --coprocess program was not found, or the --coprocess handler
  /// kept ending without an answer.
  case unavailable = 69
  /// EX_SOFTWARE: an internal error (a demo check that failed), or an error with no other
  /// status.
  case software = 70
  /// EX_OSERR: a handler process could not be started.
  case osError = 71
  /// EX_CANTCREAT: `create` found the mailbox already there.
  case cannotCreate = 73
  /// EX_IOERR: reading or writing the mailbox, stdout or the `--output` file failed, or that
  /// file cannot be opened.
  case ioError = 74
  /// EX_TEMPFAIL: the mailbox is full, a handler failed and its message was released, or
  /// `cancel` found the message claimed.
  case temporaryFailure = 75
  /// EX_PROTOCOL: a `--coprocess` handler refused the handler protocol (another version, or no
  /// greeting).
  case protocolError = 76
  /// Interrupted by SIGINT (128 + 2), as shells report it.
  case interrupted = 130
}

/// A failure that ends the command with a message on stderr and an exit status.
struct CommandFailure: Error, CustomStringConvertible {
  var status: ExitStatus
  var message: String
  var description: String { message }

  init(_ status: ExitStatus, _ message: String) {
    self.status = status
    self.message = message
  }

  /// The failure for a library error during `what` (for example "enqueue").
  init(_ error: any Error, while what: String) {
    guard let mailboxError = error as? AppGroupMailboxError else {
      self.init(.software, "\(what): \(error)")
      return
    }
    let text = mailboxError.errorDescription ?? "\(mailboxError)"
    let status: ExitStatus
    switch mailboxError {
    case .invalidNamespace, .invalidLimit: status = .usage
    case .containerUnavailable: status = .unavailable
    case .mailboxDirectoryRemoved: status = .noInput
    // No sequence left lasts only while a message with the ceiling's sequence is there.
    case .mailboxFull, .claimNoLongerExists, .ordinalExhausted: status = .temporaryFailure
    case .payloadTooLarge, .decodingFailure, .encodingFailure: status = .dataError
    case .ioFailure: status = .ioError
    default: status = .software
    }
    if case .mailboxDirectoryRemoved = mailboxError {
      // The library's text tells a program to open the mailbox again; a command ends instead.
      let removed = "the mailbox directory was deleted, moved or replaced while the command ran"
      self.init(status, what.isEmpty ? removed : "\(what): \(removed)")
      return
    }
    if case .ioFailure(let cause) = mailboxError, !cause.operation.isEmpty {
      // The cause names the operation itself: "enqueue: write failed: No space left on device
      // (errno 28)", not "enqueue: A mailbox file operation failed: enqueue: write failed: ...".
      self.init(status, "\(cause)")
      return
    }
    self.init(status, what.isEmpty ? text : "\(what): \(text)")
  }
}
