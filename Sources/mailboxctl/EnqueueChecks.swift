import AppGroupMailbox
import Foundation

/// The checks `mailboxctl enqueue` makes before it writes anything, each refusing with exit 65
/// (``ExitStatus/dataError``) and the reason.
enum EnqueueChecks {
  /// Refuses `message` with exit 65 and the reason when it may not be stored: not UTF-8, a byte
  /// order mark inside, not one JSON value (empty, nested too deeply, more than one value) or
  /// too large. Writes nothing.
  static func message(
    _ input: EnqueueInput, _ message: EnqueueInput.Message, lines: Bool,
    limits: AppGroupMailboxLimits, id: UUID?, type: String, payloadVersion: Int, key: String?
  ) throws {
    let payload = input.payload(message)
    let place = lines ? "line \(message.line): " : ""
    do {
      try AppGroupRawMailbox.validate(
        payload, limits: limits, id: id, messageType: type, payloadVersion: payloadVersion,
        key: key)
    } catch AppGroupMailboxError.decodingFailure {
      let firstLine = 1 + input.data[..<message.range.lowerBound].filter { $0 == 0x0A }.count
      // An offset in the payload as a place in the input: columns count characters from 1 (the
      // UTF-8 bytes that start one), as an editor shows them, a dropped byte order mark not.
      func position(_ offset: Int) -> String {
        let at = message.range.lowerBound + offset
        var lineStart = input.data[..<at].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        if at - lineStart >= 3, input.data[lineStart..<at].starts(with: [0xEF, 0xBB, 0xBF]) {
          lineStart += 3
        }
        let column = 1 + input.data[lineStart..<at].filter { $0 & 0xC0 != 0x80 }.count
        let line = firstLine + input.data[message.range.lowerBound..<at].filter { $0 == 0x0A }.count
        return (lines ? "" : "line \(line), ") + "column \(column)"
      }
      let reason = JSONDiagnosis.reason(
        payload, firstLine: lines ? nil : firstLine, position: position
      ) { value in
        (try? AppGroupRawMailbox.validate(value, limits: limits)) != nil
      }
      throw CommandFailure(.dataError, "\(place)\(reason); nothing was enqueued")
    } catch AppGroupMailboxError.invalidLimit(let name) where name.hasPrefix("key") {
      throw EnqueueKey.refusal(key ?? "")
    } catch AppGroupMailboxError.payloadTooLarge(let actual, let maximum) {
      throw tooLarge(actual, maximum, place: place, lines: false)
    } catch AppGroupMailboxError.encodingFailure {
      // The payload is JSON already: only the header line can fail (docs/FORMAT.md).
      throw CommandFailure(
        .dataError,
        "--type is too long: the message's header line would be over the 4096 bytes every "
          + "reader accepts; nothing was enqueued")
    } catch {
      throw CommandFailure(error, while: "")
    }
  }

  /// Refuses (exit 65) a message that would expire before it could be claimed: a `--not-before`
  /// date at or past `lifetime` seconds after `date` (its `--enqueued-at`, else now), or an
  /// `--enqueued-at` date already `lifetime` seconds old. `creating`: the mailbox is not there
  /// yet, so the hint names `create` instead of `config`.
  static func expiry(
    _ notBefore: Date?, date: Date?, id: UUID?, lifetime: TimeInterval, creating: Bool
  ) throws(CommandFailure) {
    let now = Date()
    let tooLate = notBefore.map { $0.timeIntervalSince(date ?? now) >= lifetime } ?? false
    guard tooLate || date.map({ now.timeIntervalSince($0) >= lifetime }) == true else { return }
    throw expired(
      dueTooLate: tooLate, lifetime: lifetime, creating: creating, message: name(id))
  }

  /// How a refusal names the message: by its id only when the caller chose it (a generated
  /// one was never shown anywhere).
  static func name(_ id: UUID?) -> String {
    id.map { "message \($0.uuidString.lowercased())" } ?? "the message"
  }

  /// The failure for a message that would expire before it is due (`dueTooLate`) or is older
  /// than the mailbox's lifetime of `lifetime` seconds, with the command that raises it.
  /// `message` names it ("the message", or "message ID" when the caller chose the id);
  /// `outcome` says what was written.
  static func expired(
    dueTooLate: Bool, lifetime: TimeInterval, creating: Bool, message: String = "the message",
    outcome: String = "nothing was enqueued"
  ) -> CommandFailure {
    let seconds = "\(Output.seconds(lifetime)) s"
    let why =
      dueTooLate
      ? "would expire before it is due (the mailbox's message lifetime is \(seconds))"
      : "is older than the mailbox's message lifetime (\(seconds))"
    return CommandFailure(
      .dataError,
      "\(message) \(why); \(outcome) ('mailboxctl \(creating ? "create" : "config") "
        + "--message-lifetime SECONDS' raises it)")
  }

  /// Exit 65 for a message file of `actual` bytes over the mailbox's maxPayloadBytes, `maximum`:
  /// found before anything was written, or by the enqueue's second check under the namespace lock
  /// (another process lowered the limit meanwhile). Without `lines`, that nothing was enqueued
  /// (with `lines`, ``progress(_:_:stored:)`` says how far it got).
  static func tooLarge(_ actual: Int, _ maximum: Int, place: String, lines: Bool) -> CommandFailure
  {
    var text =
      "\(place)the message file would be \(actual) bytes, over the limit of \(maximum) "
      + "(the mailbox's maxPayloadBytes)"
    if !lines { text += "; nothing was enqueued" }
    return CommandFailure(.dataError, text)
  }
}
