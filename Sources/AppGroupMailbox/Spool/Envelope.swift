import Foundation

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
}

/// Why an envelope could not be read.
enum EnvelopeError: Error, Equatable {
  /// Empty, NUL-filled, no header line, a header that is not the expected JSON, or an id that is
  /// not a UUID.
  case malformed
  /// A format newer than this build reads.
  case futureFormat
}

/// Builds and splits message files.
enum Envelope {
  /// The envelope format this build writes; it reads this and every older one.
  static let currentFormat = 1
  /// The longest header line a reader accepts, in bytes.
  static let maxHeaderBytes = 4096

  private static let encoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }()

  /// The bytes of a message file: header line then `payload`.
  static func encode(
    id: UUID, enqueuedAt: Int64, messageType: String, key: String? = nil, payload: Data
  ) throws -> Data {
    if key == nil,
      let data = fastEncode(
        id: id, enqueuedAt: enqueuedAt, messageType: messageType, payload: payload)
    {
      return data
    }
    let header = EnvelopeHeader(
      format: currentFormat, id: id.uuidString.lowercased(), enqueuedAt: enqueuedAt,
      messageType: messageType, key: key)
    var data = try encoder.encode(header)
    data.append(UInt8(ascii: "\n"))
    data.append(payload)
    return data
  }

  /// The same bytes as the `JSONEncoder` path (sorted keys, no escaped slashes) built directly,
  /// when `messageType` is printable ASCII without `"` or `\` (nothing to escape) and
  /// `enqueuedAt` is not negative; nil otherwise.
  static func fastEncode(id: UUID, enqueuedAt: Int64, messageType: String, payload: Data)
    -> Data?
  {
    guard enqueuedAt >= 0,
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
    bytes.append(contentsOf: "\"}\n".utf8)
    bytes.append(contentsOf: payload)
    return Data(bytes)
  }

  /// Splits a message file into its header and the byte range of the encoded message.
  static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> (EnvelopeHeader, Range<Int>) {
    let searchLimit = min(bytes.count, maxHeaderBytes)
    guard let newline = bytes[..<searchLimit].firstIndex(of: UInt8(ascii: "\n")), newline > 0,
      bytes[0] == UInt8(ascii: "{")
    else { throw .malformed }
    if let header = fastDecode(bytes[..<newline]) { return (header, (newline + 1)..<bytes.count) }
    let headerBytes = Data(bytes[..<newline])
    // One decoding pass on the usual path; the format alone is decoded again only when the
    // full header does not decode (a future format may change the other fields).
    struct Loose: Decodable {
      var format: Int
      var id: String?
      var enqueuedAt: Int64?
      var messageType: String?
      var key: String?
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
    guard let id = loose.id, let enqueuedAt = loose.enqueuedAt,
      let messageType = loose.messageType, UUID(uuidString: id) != nil
    else { throw .malformed }
    let header = EnvelopeHeader(
      format: loose.format, id: id, enqueuedAt: enqueuedAt, messageType: messageType,
      key: loose.key)
    return (header, (newline + 1)..<bytes.count)
  }

  /// Reads a header line in exactly the form ``fastEncode(id:enqueuedAt:messageType:payload:)``
  /// writes (format 1, nothing escaped); nil for any other form, which the `JSONDecoder` path
  /// then judges. Where it answers, it answers as that path would.
  static func fastDecode(_ line: ArraySlice<UInt8>) -> EnvelopeHeader? {
    var rest = line[...]
    func literal(_ text: String) -> Bool {
      let expected = Array(text.utf8)
      guard rest.starts(with: expected) else { return false }
      rest = rest.dropFirst(expected.count)
      return true
    }
    func number() -> UInt64? {
      let digits = rest.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
      guard !digits.isEmpty, digits.count <= 18,
        digits.first != UInt8(ascii: "0") || digits.count == 1
      else { return nil }
      rest = rest.dropFirst(digits.count)
      return PendingName.digits(digits)
    }
    guard literal(#"{"enqueuedAt":"#), let micros = number(), literal(#","format":1,"id":""#)
    else { return nil }
    let idBytes = rest.prefix(36)
    // Lower case only, as written: another spelling goes to the JSONDecoder path.
    guard !idBytes.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }),
      NameBytes.parseUUID(idBytes) != nil
    else { return nil }
    rest = rest.dropFirst(36)
    guard literal(#"","messageType":""#) else { return nil }
    let type = rest.prefix {
      $0 >= 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
    }
    rest = rest.dropFirst(type.count)
    guard literal("\"}"), rest.isEmpty else { return nil }
    return EnvelopeHeader(
      format: 1, id: String(decoding: idBytes, as: UTF8.self), enqueuedAt: Int64(micros),
      messageType: String(decoding: type, as: UTF8.self))
  }
}
