import AppGroupMailbox
import Foundation
import Glibc

/// Default delivery: each message is one JSON line on stdout, acknowledged once write(2) has
/// taken the whole line. A line written is handed off: a pipe or terminal cannot say whether its
/// reader used it (see `--output` for a file that keeps at-least-once). A line not written, or
/// written only in part (a pipe whose reader left mid-line, a disk that filled), is no delivery:
/// its message and the rest of the batch are put back without counting the delivery, so
/// `--max-delivery-attempts` never makes a dead letter of a message nobody received.
final class StdoutDelivery: DeliveryMode {
  let context: DrainContext

  init(context: DrainContext) { self.context = context }

  var capacity: Int { 1 }
  var inFlight: Int { 0 }

  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    for (index, claim) in claims.enumerated() {
      let bytes = Array((DrainContext.line(claim) + "\n").utf8)
      let error = FileDescriptorWriter.writeAll(
        1, bytes, until: FileDescriptorWriter.afterStopSignal)
      guard error == 0 else {
        // Not written, or cut short (also by a stop signal, or --timeout and --shutdown-timeout,
        // while the pipe was full): back to the mailbox at once, uncounted (the reader, not the
        // message, failed; a part of a line is no message).
        for unwritten in claims[index...] { context.putBack(unwritten) }
        if error != EINTR {
          context.fail(Self.failure(error, what: "stdout"))
        } else if !Signals.stopReceived {
          context.fail(
            CommandFailure(
              .ioError,
              "stdout's reader did not take the line being written within "
                + "--shutdown-timeout after --timeout: stopped; " + Self.putBackNote))
        }
        return
      }
      context.acknowledge(claim)
    }
  }

  func poll() {}
  func abandon() {}
  func close() {}

  /// What the failures of ``failure(_:what:)`` say about the messages not written.
  static let putBackNote = "the messages not written were put back, their delivery not counted"

  /// The failure for a write error on `what` after the messages not written were put back
  /// (`note` says which): EPIPE says the reader went away.
  static func failure(_ error: Int32, what: String, note: String = putBackNote)
    -> CommandFailure
  {
    if Errno(rawValue: error) == .brokenPipe {
      return CommandFailure(
        .ioError, "\(what) was closed by its reader (EPIPE): stopped claiming; \(note)")
    }
    return CommandFailure(
      .ioError, "writing \(what) failed: \(Errno(rawValue: error).explanation); \(note)")
  }
}
