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
        // Not written, or cut short (also by a stop signal while the pipe was full): back to
        // the mailbox at once, uncounted (the reader, not the message, failed; a part of a line
        // is no message).
        for unwritten in claims[index...] { context.putBack(unwritten) }
        if error != EINTR { context.fatal = Self.failure(error, what: "stdout") }
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

  /// The failure for a write error on `what` after the messages not written were put back:
  /// EPIPE says the reader went away.
  static func failure(_ error: Int32, what: String) -> CommandFailure {
    if Errno(rawValue: error) == .brokenPipe {
      return CommandFailure(
        .ioError,
        "\(what) was closed by its reader (EPIPE): stopped claiming; \(putBackNote)")
    }
    return CommandFailure(
      .ioError, "writing \(what) failed: \(Errno(rawValue: error).explanation); \(putBackNote)")
  }
}

/// `--output FILE`: messages are appended to FILE as JSON lines (the stdout format), a batch at
/// a time; FILE is flushed to disk with fsync(2), and only then are the batch's messages
/// acknowledged. Killed at any instant, every message is in FILE or still in the mailbox (a
/// message may be in both: it is then delivered again). A batch whose write or flush failed is
/// put back without counting the delivery (a line not surely on disk is no delivery).
///
/// A line cut short by a crash or a full disk has no line break; before its first append,
/// drain ends such a last line with one, so the next line starts whole.
final class FileDelivery: DeliveryMode {
  let context: DrainContext
  let path: String
  private let fd: Int32
  /// Messages per write and fsync.
  private let batch = 256

  /// Opens (creating with mode 0666 less the umask) `path` for appending.
  /// - Throws: ``CommandFailure`` (``ExitStatus/ioError``, also when it cannot be opened) with
  ///   the errno.
  init(context: DrainContext, path: String) throws(CommandFailure) {
    self.context = context
    self.path = path
    var descriptor: Int32
    repeat {
      // A FIFO without a reader blocks here; a stop signal interrupts it (no SA_RESTART).
      descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o666)
    } while descriptor < 0 && Errno.current == .interrupted && !Signals.stopReceived
    guard descriptor >= 0 else {
      if Errno.current == .interrupted, let name = context.signals.stopSignalName {
        throw CommandFailure(
          context.signals.stoppedStatus,
          "--output: stopped by \(name) while opening \(path); nothing was claimed")
      }
      throw CommandFailure(
        .ioError, "--output: cannot open \(path): \(Errno.current.explanation)")
    }
    fd = descriptor
    var info = stat()
    var last: UInt8 = 0x0A
    if fstat(fd, &info) == 0, info.st_size > 0 {
      let reader = open(path, O_RDONLY | O_CLOEXEC)
      if reader >= 0 {
        _ = pread(reader, &last, 1, info.st_size - 1)
        Glibc.close(reader)
      }
    }
    if last != 0x0A {
      let error = FileDescriptorWriter.writeAll(fd, [UInt8(0x0A)])
      if error != 0 {
        throw CommandFailure(
          .ioError, "writing \(path) failed: \(Errno(rawValue: error).explanation)")
      }
    }
    // The file's own name must survive a crash too: flush the directory that holds it.
    let directory = open(
      (path as NSString).deletingLastPathComponent.isEmpty
        ? "." : (path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directory >= 0 {
      _ = fsync(directory)
      Glibc.close(directory)
    }
  }

  var capacity: Int { batch }
  var inFlight: Int { 0 }

  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    var bytes: [UInt8] = []
    for claim in claims { bytes += Array((DrainContext.line(claim) + "\n").utf8) }
    var error = FileDescriptorWriter.writeAll(
      fd, bytes, until: FileDescriptorWriter.afterStopSignal)
    if error == 0, fsync(fd) != 0 { error = Errno.current.rawValue }
    guard error == 0 else {
      for claim in claims { context.putBack(claim) }
      if error != EINTR { context.fatal = StdoutDelivery.failure(error, what: path) }
      return
    }
    for claim in claims { context.acknowledge(claim) }
  }

  func poll() {}
  func abandon() {}
  func close() { Glibc.close(fd) }
}
