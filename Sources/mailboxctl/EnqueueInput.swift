import AppGroupMailbox
import Foundation
import Glibc

/// The input of `mailboxctl enqueue`, read whole and cut into messages by the rules the man page
/// states (SUBCOMMANDS, `enqueue`):
/// - a UTF-8 byte order mark at the start of the input, and with `--lines` at the start of a
///   line, is dropped (RFC 8259 section 8.1 lets a parser ignore it; it is not part of the
///   value);
/// - every CR that ends a line (CR LF) is dropped: valid JSON holds a raw CR only as whitespace
///   between tokens, so nothing of the value changes;
/// - each message is trimmed of JSON whitespace (space, tab, CR, LF) at both ends;
/// - with `--lines`, each line is one message; lines holding only whitespace are skipped and
///   still counted, so line numbers are those of the input.
struct EnqueueInput {
  /// One message: its input line (1-based; 1 without `--lines`) and its bytes in ``data``.
  struct Message {
    var line: Int
    var range: Range<Int>
  }

  /// The input after the BOM and CR LF rules; messages are ranges of it (no copy per message).
  let data: Data
  let messages: [Message]

  /// Cuts `raw` into messages: one a line when `lines`, else one.
  init(_ raw: [UInt8], lines: Bool) {
    var bytes = raw
    if bytes.contains(0x0D) {
      var kept: [UInt8] = []
      kept.reserveCapacity(bytes.count)
      for (index, byte) in bytes.enumerated()
      where byte != 0x0D || index + 1 == bytes.count || bytes[index + 1] != 0x0A {
        kept.append(byte)
      }
      bytes = kept
    }
    var messages: [Message] = []
    if lines {
      var number = 0
      var start = 0
      while start < bytes.count {
        let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
        number += 1
        let range = Self.trimmed(bytes, start..<end)
        if !range.isEmpty { messages.append(Message(line: number, range: range)) }
        start = end + 1
      }
    } else {
      messages.append(Message(line: 1, range: Self.trimmed(bytes, 0..<bytes.count)))
    }
    self.data = Data(bytes)
    self.messages = messages
  }

  /// The bytes of `message`.
  func payload(_ message: Message) -> Data { data.subdata(in: message.range) }

  /// `range` without a leading byte order mark and without JSON whitespace at either end.
  private static func trimmed(_ bytes: [UInt8], _ range: Range<Int>) -> Range<Int> {
    var start = range.lowerBound
    var end = range.upperBound
    if end - start >= 3, bytes[start] == 0xEF, bytes[start + 1] == 0xBB, bytes[start + 2] == 0xBF {
      start += 3
    }
    while start < end, JSONDiagnosis.isWhitespace(bytes[start]) { start += 1 }
    while end > start, JSONDiagnosis.isWhitespace(bytes[end - 1]) { end -= 1 }
    return start..<end
  }

  /// The most standard input one message is read from: the largest message file a mailbox
  /// takes (``AppGroupMailboxLimits/payloadCeiling``, 64 MiB) and 1 MiB of whitespace around
  /// it. More is refused while it is read, not held in memory.
  static let singleMessageInputLimit = AppGroupMailboxLimits.payloadCeiling + 1_048_576

  /// Reads standard input to its end with read(2), retrying EINTR and waiting (poll(2)) when
  /// the descriptor is non-blocking; at most `limit` bytes (nil: no bound).
  /// - Throws: ``CommandFailure`` with ``ExitStatus/noInput`` (66) naming the errno when stdin
  ///   cannot be read: closed (EBADF), a directory (EISDIR), an I/O error (EIO)...; with
  ///   ``ExitStatus/dataError`` (65) once it holds more than `limit` bytes.
  static func readStandardInput(limit: Int? = nil) throws(CommandFailure) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
      if count > 0 {
        bytes.append(contentsOf: chunk[..<count])
        if let limit, bytes.count > limit {
          throw CommandFailure(
            .dataError,
            "standard input holds more than \(limit) bytes, more than one message can be (a "
              + "message file holds at most \(AppGroupMailboxLimits.payloadCeiling) bytes, the "
              + "largest maxPayloadBytes); nothing was enqueued (--lines takes one message a "
              + "line)")
        }
        continue
      }
      if count == 0 { return bytes }
      let code = Errno.current
      if code == .interrupted { continue }
      if code == .wouldBlock {
        var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        _ = poll(&ready, 1, -1)
        continue
      }
      throw CommandFailure(
        .noInput,
        "cannot read standard input: \(code.explanation); "
          + "nothing was enqueued")
    }
  }
}
