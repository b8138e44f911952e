import AppGroupMailbox
import Foundation
import Glibc

/// `--output FILE`: messages are appended to FILE as JSON lines (the stdout format), a batch at
/// a time; FILE is flushed to disk with fsync(2), and only then are the batch's messages
/// acknowledged. Killed at any instant, every message is in FILE or still in the mailbox (a
/// message may be in both: it is then delivered again). A batch whose write or flush failed is
/// put back without counting the delivery (a line not surely on disk is no delivery).
///
/// The lines must be in the file at `path` when they are acknowledged, not in one that was
/// moved away or deleted meanwhile (logrotate, `rm`): before and after each batch, drain checks
/// that `path` still names the file it writes (same device and inode, still linked). When it
/// does not, drain opens `path` again (creating it), and a batch written to the old file is put
/// back uncounted, so it goes to the new one too.
///
/// Only a regular file: fsync(2) cannot make a FIFO or a device durable (it fails with EINVAL),
/// so those are refused before anything is claimed, and a FILE replaced by one mid-run ends
/// drain with ``ExitStatus/ioError``, the batch put back. FILE is never opened in a way that
/// waits (a FIFO's open(2) would wait for a reader while drain holds claimed messages). A line
/// cut short by a crash or a full disk has no line break; before its first append, drain ends
/// such a last line with one, so the next line starts whole. It is not truncated away: another
/// drain may append to the same file, and its lines after that point may be acknowledged.
final class FileDelivery: DeliveryMode {
  let context: DrainContext
  let path: String
  private var fd: Int32
  /// Device and inode of the file `fd` writes.
  private var identity: (device: UInt64, inode: UInt64)
  /// Messages per write and fsync.
  private let batch = 256

  /// Opens (creating with mode 0666 less the umask) `path` for appending.
  /// - Throws: ``CommandFailure``: ``ExitStatus/usage`` when `path` is not a regular file;
  ///   ``ExitStatus/ioError`` with the errno when it cannot be opened or its last line not
  ///   ended.
  init(context: DrainContext, path: String) throws(CommandFailure) {
    self.context = context
    self.path = path
    (fd, identity) = try Self.open(path, refusal: .usage)
  }

  /// The failure for a `path` that is not a regular file, with `status` (``ExitStatus/usage``
  /// before anything was claimed, ``ExitStatus/ioError`` when it became one mid-run).
  private static func notRegular(_ path: String, _ status: ExitStatus) -> CommandFailure {
    CommandFailure(
      status,
      "--output: \(path) is \(status == .usage ? "not" : "no longer") a regular file: drain appends "
        + "to a file and flushes it to disk with fsync(2) before acknowledging, which a directory, "
        + "FIFO or device cannot take; to hand the messages to a program, drain to stdout or use --exec "
        + "or --coprocess")
  }

  /// Opens `path` for appending (creating it), ends a last line cut short, flushes the
  /// directory, and returns the descriptor with the file's device and inode. Anything but a
  /// regular file is refused with `refusal` as its status, by stat(2) before it is opened and
  /// by fstat(2) after; the open never waits (non-blocking: a FIFO's open(2) would wait for a
  /// reader, and without one fails with ENXIO).
  private static func open(_ path: String, refusal: ExitStatus) throws(CommandFailure) -> (
    Int32, (device: UInt64, inode: UInt64)
  ) {
    // Looked at before it is opened: opening a FIFO or device for writing is itself an act
    // (its reader sees end of file when it is closed again; a device may react).
    var before = stat()
    if stat(path, &before) == 0, before.st_mode & S_IFMT != S_IFREG {
      throw notRegular(path, refusal)
    }
    var descriptor: Int32
    repeat {
      descriptor = Glibc.open(
        path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o666)
    } while descriptor < 0 && Errno.current == .interrupted
    guard descriptor >= 0 else {
      // Replaced since the look: a FIFO without a reader (ENXIO), a directory (EISDIR).
      if [.noSuchAddressOrDevice, .isDirectory].contains(Errno.current) {
        throw notRegular(path, refusal)
      }
      throw CommandFailure(
        .ioError, "--output: cannot open \(path): \(Errno.current.explanation)")
    }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else {
      let failure = CommandFailure(
        .ioError, "--output: cannot open \(path): \(Errno.current.explanation)")
      Glibc.close(descriptor)
      throw failure
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      Glibc.close(descriptor)
      throw notRegular(path, refusal)
    }
    var last: UInt8 = 0x0A
    if info.st_size > 0 {
      let reader = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
      if reader >= 0 {
        _ = pread(reader, &last, 1, info.st_size - 1)
        Glibc.close(reader)
      }
    }
    if last != 0x0A {
      let error = FileDescriptorWriter.writeAll(descriptor, [UInt8(0x0A)])
      if error != 0 {
        Glibc.close(descriptor)
        throw CommandFailure(
          .ioError, "writing \(path) failed: \(Errno(rawValue: error).explanation)")
      }
    }
    // The file's own name must survive a crash too: flush the directory that holds it.
    let parent = (path as NSString).deletingLastPathComponent
    let directory = Glibc.open(
      parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directory >= 0 {
      _ = fsync(directory)
      Glibc.close(directory)
    }
    return (descriptor, (UInt64(info.st_dev), UInt64(info.st_ino)))
  }

  var capacity: Int { batch }
  var inFlight: Int { 0 }

  func deliver(_ claims: [AppGroupRawMailbox.Claim]) {
    // Moved away or deleted since the last batch: write to the file now at `path`.
    if !isAtPath {
      guard reopen() else {
        for claim in claims { context.putBack(claim) }
        return
      }
      Output.note("drain: --output \(path) was moved away or deleted; writing to a new \(path)")
    }
    var bytes: [UInt8] = []
    for claim in claims { bytes += Array((DrainContext.line(claim) + "\n").utf8) }
    var error = FileDescriptorWriter.writeAll(
      fd, bytes, until: FileDescriptorWriter.afterStopSignal)
    if error == 0, fsync(fd) != 0 { error = Errno.current.rawValue }
    guard error == 0 else {
      for claim in claims { context.putBack(claim) }
      if error != EINTR {
        context.fail(
          StdoutDelivery.failure(
            error, what: path,
            note: "the batch was put back, its delivery not counted (any of its lines already "
              + "in the file will be there twice, and one cut short stays as a line that is not "
              + "JSON)"))
      }
      return
    }
    // Moved away or deleted while it was written: the lines are not at `path`, so the batch
    // goes back, uncounted, to be written to the new file.
    guard isAtPath else {
      for claim in claims { context.putBack(claim) }
      if reopen() {
        Output.note(
          "drain: --output \(path) was moved away or deleted while drain wrote to it; writing "
            + "to a new \(path), where the \(Output.counted(claims.count, "message")) written "
            + "to the old file \(claims.count == 1 ? "goes" : "go") again")
      }
      return
    }
    for claim in claims { context.acknowledge(claim) }
  }

  /// Whether `path` names the file being written, and it is still linked.
  private var isAtPath: Bool {
    var mine = stat()
    var there = stat()
    guard fstat(fd, &mine) == 0, mine.st_nlink > 0, stat(path, &there) == 0 else {
      return false
    }
    return UInt64(there.st_dev) == identity.device && UInt64(there.st_ino) == identity.inode
  }

  /// Opens `path` again (creating it) after the file was moved away or deleted. False, with
  /// the failure recorded, when it cannot be opened.
  private func reopen() -> Bool {
    Glibc.close(fd)
    fd = -1
    do {
      (fd, identity) = try Self.open(path, refusal: .ioError)
      return true
    } catch {
      context.fail(error)
      return false
    }
  }

  func poll() {}
  func abandon() {}
  func close() { if fd >= 0 { Glibc.close(fd) } }
}
