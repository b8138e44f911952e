import Foundation
import Glibc

/// The first line of every message file: a JSON object without line breaks, then `\n`, then the
/// encoded message. See docs/FORMAT.md.
struct EnvelopeHeader: Codable, Equatable, Sendable {
  /// The envelope format; this build writes and reads ``Envelope/currentFormat``.
  var format: Int
  /// The message id, a UUID in lower case.
  var id: String
  /// Microseconds since the Unix epoch when the message was enqueued (or its import date);
  /// equals the time in the file name except for a delayed enqueue, whose name carries its due
  /// time, and a keyed replacement, which carries the replaced message's name (docs/FORMAT.md).
  var enqueuedAt: Int64
  /// The producer's message type; empty means untyped (accepted by every consumer).
  var messageType: String
  /// The replace-by-key key of a keyed enqueue (docs/FORMAT.md, "Keys"); nil (absent) for
  /// every other message. Older readers ignore the member.
  var key: String? = nil
  /// The payload version of the encoded message (``AppGroupMailboxVersionedMessage``), separate
  /// from ``format``: absent (nil) means 1, and is how version 1 is written, so a version-1
  /// file is byte for byte what builds without payload versions write.
  var payloadVersion: Int? = nil

  /// The payload version this header declares: ``payloadVersion``, 1 when absent.
  var declaredPayloadVersion: Int { payloadVersion ?? 1 }
}

/// Why an envelope could not be read.
enum EnvelopeError: Error, Equatable {
  /// Empty, NUL-filled, no header line, a header that is not the expected JSON, or an id that is
  /// not a UUID.
  case malformed
  /// A format newer than this build reads.
  case futureFormat
}

/// A header line (with its line feed) longer than ``Envelope/maxHeaderBytes``: readers look
/// for the line feed only that far, so the file would be malformed to every one of them.
struct EnvelopeHeaderTooLong: Error {}

/// Builds and splits message files.
enum Envelope {
  /// The largest payload version a header may hold: 2,147,483,647 (2^31 - 1); public as
  /// ``AppGroupMailboxPayloadVersions/maximum``. Here, with the format, so the parsers' fuzz
  /// target (scripts/fuzz) compiles this file alone.
  static let maximumPayloadVersion = Int(Int32.max)

  /// The envelope format this build writes; it reads this and every older one.
  static let currentFormat = 1
  /// The longest header line a reader accepts, in bytes, its line feed included (readers look
  /// for the line feed within the first this many bytes).
  static let maxHeaderBytes = 4096

  private static let encoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }()

  /// The bytes of a message file: header line then `payload`. A `payloadVersion` of 1 is not
  /// written (the header member is absent).
  /// - Throws: ``EnvelopeHeaderTooLong`` when the header line would not fit in
  ///   ``maxHeaderBytes`` with its line feed (a long type tag), which every reader would refuse
  ///   as malformed; the encoder's error when `JSONEncoder` fails.
  static func encode(
    id: UUID, enqueuedAt: Int64, messageType: String, key: String? = nil,
    payloadVersion: Int = 1, payload: Data
  ) throws -> Data {
    if key == nil,
      let data = fastEncode(
        id: id, enqueuedAt: enqueuedAt, messageType: messageType,
        payloadVersion: payloadVersion, payload: payload)
    {
      guard data.count - payload.count <= maxHeaderBytes else { throw EnvelopeHeaderTooLong() }
      return data
    }
    let header = EnvelopeHeader(
      format: currentFormat, id: id.uuidString.lowercased(), enqueuedAt: enqueuedAt,
      messageType: messageType, key: key,
      payloadVersion: payloadVersion == 1 ? nil : payloadVersion)
    var data = try encoder.encode(header)
    data.append(UInt8(ascii: "\n"))
    guard data.count <= maxHeaderBytes else { throw EnvelopeHeaderTooLong() }
    data.append(payload)
    return data
  }

  /// The same bytes as the `JSONEncoder` path (sorted keys, no escaped slashes) built directly,
  /// when `messageType` is printable ASCII without `"` or `\` (nothing to escape) and
  /// `enqueuedAt` is not negative and `payloadVersion` is positive; nil otherwise.
  static func fastEncode(
    id: UUID, enqueuedAt: Int64, messageType: String, payloadVersion: Int = 1, payload: Data
  ) -> Data? {
    guard enqueuedAt >= 0, payloadVersion >= 1,
      messageType.utf8.allSatisfy({
        $0 >= 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
      })
    else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(96 + messageType.utf8.count + payload.count)
    bytes.append(contentsOf: #"{"enqueuedAt":"#.utf8)
    NameBytes.decimal(UInt64(enqueuedAt), width: 1, into: &bytes)
    bytes.append(contentsOf: #","format":"#.utf8)
    NameBytes.decimal(UInt64(currentFormat), width: 1, into: &bytes)
    bytes.append(contentsOf: #","id":""#.utf8)
    NameBytes.uuid(id, into: &bytes)
    bytes.append(contentsOf: #"","messageType":""#.utf8)
    bytes.append(contentsOf: messageType.utf8)
    bytes.append(UInt8(ascii: "\""))
    if payloadVersion != 1 {  // sorted keys: the last member
      bytes.append(contentsOf: #","payloadVersion":"#.utf8)
      NameBytes.decimal(UInt64(payloadVersion), width: 1, into: &bytes)
    }
    bytes.append(contentsOf: "}\n".utf8)
    bytes.append(contentsOf: payload)
    return Data(bytes)
  }

  /// Splits a message file into its header and the byte range of the encoded message.
  static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> (EnvelopeHeader, Range<Int>) {
    let decoded = bytes.withUnsafeBytes { buffer in
      Result { () throws(EnvelopeError) in try decode(buffer) }
    }
    return try decoded.get()
  }

  /// Splits a message file, as the array form does, over the bytes where the checked reader
  /// read them (``FileBytes``): nothing is copied but the header line on its `JSONDecoder` path.
  static func decode(_ bytes: UnsafeRawBufferPointer) throws(EnvelopeError) -> (
    EnvelopeHeader, Range<Int>
  ) {
    let searchLimit = min(bytes.count, maxHeaderBytes)
    guard let base = bytes.baseAddress,
      let at = memchr(base, Int32(UInt8(ascii: "\n")), searchLimit)
    else { throw .malformed }
    let newline = base.distance(to: UnsafeRawPointer(at))
    guard newline > 0, bytes[0] == UInt8(ascii: "{") else { throw .malformed }
    let line = UnsafeBufferPointer(rebasing: bytes.assumingMemoryBound(to: UInt8.self)[..<newline])
    if let header = fastDecode(bytes: line) { return (header, (newline + 1)..<bytes.count) }
    // The members' spelling first: what JSONDecoder would decide differently from another
    // reader (interop/python) is malformed for both (docs/FORMAT.md, "Message files").
    guard let members = JSONSyntax.distinctMembers(UnsafeRawBufferPointer(line)) else {
      throw .malformed
    }
    // Whether the member `name`, when there and a number, is an integer literal (absent or of
    // another type: the decoder's call).
    func isInteger(_ name: String) -> Bool {
      guard let range = members[Array(name.utf8)] else { return true }
      let text = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(line)[range])
      return !JSONSyntax.isNumber(text) || JSONSyntax.isIntegerLiteral(text)
    }
    guard isInteger("format") else { throw .malformed }
    let headerBytes = Data(buffer: line)
    // One decoding pass on the usual path; the format alone is decoded again only when the
    // full header does not decode (a future format may change the other fields).
    struct Loose: Decodable {
      var format: Int
      var id: String?
      var enqueuedAt: Int64?
      var messageType: String?
      var key: String?
      var payloadVersion: Int?
      /// Whether the header has `payloadVersion` as `null`: the wrong type, so malformed (an
      /// `Int?` alone reads it as absent, which interop/python and FORMAT.md do not).
      var payloadVersionIsNull = false
      /// Whether the header has `key` as `null`: the wrong type, so malformed, as for
      /// `payloadVersion`.
      var keyIsNull = false

      enum CodingKeys: String, CodingKey {
        case format, id, enqueuedAt, messageType, key, payloadVersion
      }

      init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(Int.self, forKey: .format)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        enqueuedAt = try container.decodeIfPresent(Int64.self, forKey: .enqueuedAt)
        messageType = try container.decodeIfPresent(String.self, forKey: .messageType)
        if container.contains(.key), try container.decodeNil(forKey: .key) {
          keyIsNull = true
        } else {
          key = try container.decodeIfPresent(String.self, forKey: .key)
        }
        if container.contains(.payloadVersion),
          try container.decodeNil(forKey: .payloadVersion)
        {
          payloadVersionIsNull = true
        } else {
          payloadVersion = try container.decodeIfPresent(Int.self, forKey: .payloadVersion)
        }
      }
    }
    struct Version: Decodable { var format: Int }
    let decoder = JSONDecoder()
    guard let loose = try? decoder.decode(Loose.self, from: headerBytes) else {
      if let version = try? decoder.decode(Version.self, from: headerBytes),
        version.format > currentFormat
      {
        throw .futureFormat
      }
      throw .malformed
    }
    guard loose.format >= 1 else { throw .malformed }
    guard loose.format <= currentFormat else { throw .futureFormat }
    guard isInteger("enqueuedAt"), isInteger("payloadVersion"), !loose.keyIsNull,
      let id = loose.id, let enqueuedAt = loose.enqueuedAt,
      let messageType = loose.messageType, UUID(uuidString: id) != nil,
      !loose.payloadVersionIsNull,
      (1...maximumPayloadVersion).contains(loose.payloadVersion ?? 1)
    else { throw .malformed }
    let header = EnvelopeHeader(
      format: loose.format, id: id, enqueuedAt: enqueuedAt, messageType: messageType,
      key: loose.key, payloadVersion: loose.payloadVersion == 1 ? nil : loose.payloadVersion)
    return (header, (newline + 1)..<bytes.count)
  }

  /// Reads a header line in exactly the form
  /// ``fastEncode(id:enqueuedAt:messageType:payloadVersion:payload:)`` writes (format 1, nothing
  /// escaped, no `key`, `payloadVersion` absent or 2 to
  /// ``AppGroupMailboxPayloadVersions/maximum``); nil for any other form, which the
  /// `JSONDecoder` path then judges. Where it answers, it answers as that path would.
  static func fastDecode(_ line: ArraySlice<UInt8>) -> EnvelopeHeader? {
    line.withUnsafeBufferPointer { fastDecode(bytes: $0) }
  }

  /// ``fastDecode(_:)`` over the line's bytes: a cursor over the buffer, nothing allocated but
  /// the header's strings.
  private static func fastDecode(bytes: UnsafeBufferPointer<UInt8>) -> EnvelopeHeader? {
    guard let base = bytes.baseAddress else { return nil }
    var at = 0
    func literal(_ text: StaticString) -> Bool {
      let count = text.utf8CodeUnitCount
      guard bytes.count - at >= count, memcmp(base + at, text.utf8Start, count) == 0 else {
        return false
      }
      at += count
      return true
    }
    func number() -> UInt64? {
      var end = at
      while end < bytes.count, bytes[end] &- UInt8(ascii: "0") < 10 { end += 1 }
      let count = end - at
      guard count > 0, count <= 18, bytes[at] != UInt8(ascii: "0") || count == 1,
        let value = PendingName.digits(bytes, at..<end)
      else { return nil }
      at = end
      return value
    }
    guard literal(#"{"enqueuedAt":"#), let micros = number(), literal(#","format":1,"id":""#),
      bytes.count - at >= 36
    else { return nil }
    // Lower case only, as written: another spelling goes to the JSONDecoder path.
    let idBytes = UnsafeBufferPointer(rebasing: bytes[at..<(at + 36)])
    guard NameBytes.parseUUID(idBytes, lowercaseOnly: true) != nil else { return nil }
    at += 36
    guard literal(#"","messageType":""#) else { return nil }
    let typeStart = at
    while at < bytes.count {
      let byte = bytes[at]
      guard byte >= 0x20, byte < 0x7f, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\")
      else { break }
      at += 1
    }
    let type = UnsafeBufferPointer(rebasing: bytes[typeStart..<at])
    guard literal("\"") else { return nil }
    var version: Int?
    if literal(#","payloadVersion":"#) {
      guard let number = number(), number >= 2,
        number <= UInt64(maximumPayloadVersion)
      else { return nil }
      version = Int(number)
    }
    guard literal("}"), at == bytes.count else { return nil }
    return EnvelopeHeader(
      format: 1, id: String(decoding: idBytes, as: UTF8.self), enqueuedAt: Int64(micros),
      messageType: String(decoding: type, as: UTF8.self), payloadVersion: version)
  }
}
