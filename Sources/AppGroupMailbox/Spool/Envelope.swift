import Foundation

/// The first line of every message file: a JSON object without line breaks, then `\n`, then the
/// encoded message. See docs/FORMAT.md.
struct EnvelopeHeader: Codable, Equatable, Sendable {
  /// The envelope format; this build writes and reads ``Envelope/currentFormat``.
  var format: Int
  /// The message id, a UUID in lower case.
  var id: String
  /// Microseconds since the Unix epoch; equals the time in the file name.
  var enqueuedAt: Int64
  /// The producer's message type; empty means untyped (accepted by every consumer).
  var messageType: String
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
  static func encode(id: UUID, enqueuedAt: Int64, messageType: String, payload: Data) throws
    -> Data
  {
    let header = EnvelopeHeader(
      format: currentFormat, id: id.uuidString.lowercased(), enqueuedAt: enqueuedAt,
      messageType: messageType)
    var data = try encoder.encode(header)
    data.append(UInt8(ascii: "\n"))
    data.append(payload)
    return data
  }

  /// Splits a message file into its header and the byte range of the encoded message.
  static func decode(_ bytes: [UInt8]) throws(EnvelopeError) -> (EnvelopeHeader, Range<Int>) {
    let searchLimit = min(bytes.count, maxHeaderBytes)
    guard let newline = bytes[..<searchLimit].firstIndex(of: UInt8(ascii: "\n")), newline > 0,
      bytes[0] == UInt8(ascii: "{")
    else { throw .malformed }
    let headerBytes = Data(bytes[..<newline])
    struct Version: Decodable { var format: Int }
    guard let version = try? JSONDecoder().decode(Version.self, from: headerBytes) else {
      throw .malformed
    }
    guard version.format >= 1 else { throw .malformed }
    guard version.format <= currentFormat else { throw .futureFormat }
    guard let header = try? JSONDecoder().decode(EnvelopeHeader.self, from: headerBytes),
      UUID(uuidString: header.id) != nil
    else { throw .malformed }
    return (header, (newline + 1)..<bytes.count)
  }
}
