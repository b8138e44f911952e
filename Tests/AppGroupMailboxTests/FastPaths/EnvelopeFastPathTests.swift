import Foundation
import Testing

@testable import AppGroupMailbox

/// The direct header encoder and reader (Envelope.fastEncode / fastDecode) agree byte for byte
/// with the JSONEncoder / JSONDecoder path they short-cut.
@Suite struct EnvelopeFastPathTests {
  static func slowHeader(id: UUID, micros: Int64, type: String) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let header = EnvelopeHeader(
      format: 1, id: id.uuidString.lowercased(), enqueuedAt: micros, messageType: type)
    return try encoder.encode(header) + Data("\n".utf8)
  }

  @Test(arguments: ["", "Swift.String", "a/b c-d_e.f", "Module.Outer<Inner>"])
  func `The direct header equals the JSONEncoder header`(type: String) throws {
    let id = UUID()
    for micros: Int64 in [0, 7, 1_767_225_600_000_000, MessageKey.maxMicros] {
      let fast = try #require(
        Envelope.fastEncode(id: id, enqueuedAt: micros, messageType: type, payload: Data("P".utf8)))
      #expect(fast == (try Self.slowHeader(id: id, micros: micros, type: type)) + Data("P".utf8))
      let (header, range) = try Envelope.decode(Array(fast))
      #expect(header.id == id.uuidString.lowercased())
      #expect(header.enqueuedAt == micros)
      #expect(header.messageType == type)
      #expect(range == (fast.count - 1)..<fast.count)
    }
  }

  @Test func `Headers that need escaping take the JSONEncoder path`() throws {
    let id = UUID()
    #expect(Envelope.fastEncode(id: id, enqueuedAt: 1, messageType: "a\"b", payload: Data()) == nil)
    #expect(Envelope.fastEncode(id: id, enqueuedAt: 1, messageType: "é", payload: Data()) == nil)
    let data = try Envelope.encode(id: id, enqueuedAt: 1, messageType: "a\"b", payload: Data())
    #expect(try Envelope.decode(Array(data)).0.messageType == "a\"b")
  }

  @Test func `Other spellings of a valid header still decode through JSONDecoder`() throws {
    let id = UUID().uuidString
    let spaced = #"{ "format": 1, "id": "\#(id)", "enqueuedAt": 5, "messageType": "t" }"# + "\nX"
    let (header, _) = try Envelope.decode(Array(spaced.utf8))
    #expect(header == EnvelopeHeader(format: 1, id: id, enqueuedAt: 5, messageType: "t"))
    #expect(
      Envelope.fastDecode(ArraySlice(Array(spaced.utf8).prefix(spaced.utf8.count - 2))) == nil)
  }

  @Test func `A header in the canonical form but with an upper-case id takes the JSON path`()
    throws
  {
    // Found by scripts/fuzz: the fast reader must accept only what the fast writer writes.
    let id = "3f2504e0-4f89-41D3-9a0c-0305e82c3301"
    let line = #"{"enqueuedAt":5,"format":1,"id":"\#(id)","messageType":""}"#
    #expect(Envelope.fastDecode(ArraySlice(Array(line.utf8))) == nil)
    let (header, range) = try Envelope.decode(Array((line + "\nX").utf8))
    #expect(header == EnvelopeHeader(format: 1, id: id, enqueuedAt: 5, messageType: ""))
    #expect(range == (line.utf8.count + 1)..<(line.utf8.count + 2))
  }

  @Test func `A future format is still reported as future`() throws {
    let line = #"{"enqueuedAt":5,"format":2,"id":"x","messageType":"t"}"# + "\n"
    #expect(throws: EnvelopeError.futureFormat) { try Envelope.decode(Array(line.utf8)) }
    let odd = #"{"format":9,"id":7}"# + "\n"
    #expect(throws: EnvelopeError.futureFormat) { try Envelope.decode(Array(odd.utf8)) }
  }

  @Test func `UUIDs parse like Foundation for both cases and reject other forms`() {
    let id = UUID()
    #expect(NameBytes.parseUUID(Array(id.uuidString.utf8)) == id)
    #expect(NameBytes.parseUUID(Array(id.uuidString.lowercased().utf8)) == id)
    #expect(NameBytes.parseUUID(Array("not-a-uuid".utf8)) == nil)
    #expect(
      NameBytes.parseUUID(Array(id.uuidString.replacingOccurrences(of: "-", with: "_").utf8)) == nil
    )
    #expect(NameBytes.parseUUID(Array((" " + id.uuidString.dropFirst()).utf8)) == nil)
  }

  /// The parse reads eight digits at a time: every byte value at every place of a UUID, in
  /// both modes, is taken or refused as a byte-at-a-time reading would, with Foundation's value.
  @Test func `UUID parsing takes exactly the digits and dashes, byte by byte`() {
    let mixed = Array("0123abcd-ef45-6789-ABCD-EF0123456789".utf8)
    let lower = Array("0123abcd-ef45-6789-abcd-ef0123456789".utf8)
    for (base, lowercaseOnly) in [(mixed, false), (lower, true)] {
      for place in base.indices {
        for value in 0...255 {
          var bytes = base
          bytes[place] = UInt8(value)
          let digit = (0x30...0x39).contains(value) || (0x61...0x66).contains(value)
          let upper = (0x41...0x46).contains(value)
          let taken =
            [8, 13, 18, 23].contains(place) ? value == 0x2D : digit || (upper && !lowercaseOnly)
          let parsed = bytes.withUnsafeBufferPointer {
            NameBytes.parseUUID($0, lowercaseOnly: lowercaseOnly)
          }
          let expected = taken ? UUID(uuidString: String(decoding: bytes, as: UTF8.self)) : nil
          #expect(parsed == expected, "byte \(value) at \(place)")
          if taken { #expect(parsed != nil, "byte \(value) at \(place)") }
        }
      }
    }
  }

  /// The UUID is written eight digits at a time: every nibble value at every place comes out
  /// as Foundation's lower-cased string, and parses back.
  @Test func `UUIDs are written as Foundation writes them, lower-cased`() {
    var ids = (0..<256).map { value in
      UUID(
        uuid: unsafeBitCast(
          (UInt64(value) &* 0x0101_0101_0101_0101, ~UInt64(value) << 3), to: uuid_t.self))
    }
    ids += (0..<1000).map { _ in UUID() }
    for id in ids {
      var bytes: [UInt8] = [0x41]
      NameBytes.uuid(id, into: &bytes)
      #expect(bytes == [0x41] + Array(id.uuidString.lowercased().utf8))
      #expect(NameBytes.parseUUID(bytes.dropFirst()) == id)
    }
  }

  @Test func `Names and the state line keep their fixed-width form`() {
    var bytes: [UInt8] = []
    NameBytes.decimal(42, width: 5, into: &bytes)
    NameBytes.decimal(123_456, width: 2, into: &bytes)
    NameBytes.hex(0xab, width: 4, into: &bytes)
    #expect(String(decoding: bytes, as: UTF8.self) == "0004212345600ab")
    let line = SpoolCounters(sequence: 7, depth: 3, newestImplicitMicros: 9).line
    #expect(
      String(decoding: line, as: UTF8.self)
        == "1 00000000000000000007 00000000000000000003 00000000000000000009\n")
    let id = UUID()
    let name = PendingName(key: MessageKey(micros: 12, sequence: 34), id: id, attempts: 5)
    #expect(
      name.fileName == "0000000000000012-00000000000000000034-\(id.uuidString.lowercased())-5.msg")
    #expect(PendingName(parsing: name.fileName) == name)
  }

  @Test func `Decimal, hexadecimal and UUID fields match Foundation's formatting at every width`() {
    // Every digit count's first and last value, each 8-digit word's edges, and random values
    // of every size (the digits are made eight at a time, NameBytes.decimalDigits).
    var powers: [UInt64] = [1]
    while let next = powers.last.map({ $0.multipliedReportingOverflow(by: 10) }), !next.overflow {
      powers.append(next.partialValue)
    }
    var values: [UInt64] = [0, 12_345, 1 << 32, 99_999_999_0000_0001, .max, .max - 1]
    values += powers + powers.map { $0 - 1 } + powers.dropFirst().map { $0 + 1 }
    var generator = SystemRandomNumberGenerator()
    values += (0..<500).map { _ in generator.next() >> UInt64.random(in: 0..<64) }
    for value in values {
      for width in [0, 1, 16, 20, 24, 30] {
        var bytes: [UInt8] = []
        NameBytes.decimal(value, width: width, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == PendingName.pad(value, width))
      }
      for width in [1, 4, 16] {
        var bytes: [UInt8] = []
        NameBytes.hex(value, width: width, into: &bytes)
        let text = String(value & (width == 16 ? .max : (1 << UInt64(width * 4)) - 1), radix: 16)
        #expect(
          String(decoding: bytes, as: UTF8.self)
            == String(repeating: "0", count: width - text.count) + text)
      }
    }
    for _ in 0..<100 {
      let id = UUID()
      var bytes: [UInt8] = [UInt8(ascii: "x")]
      NameBytes.uuid(id, into: &bytes)
      #expect(String(decoding: bytes, as: UTF8.self) == "x" + id.uuidString.lowercased())
    }
  }

  @Test func `The fast header reader refuses every truncation of a canonical header`() throws {
    let id = UUID()
    let data = try Envelope.encode(
      id: id, enqueuedAt: 1_700_000_000_000_000, messageType: "bench", payloadVersion: 3,
      payload: Data("1".utf8))
    let line = Array(data.prefix { $0 != UInt8(ascii: "\n") })
    let header = try #require(Envelope.fastDecode(line[...]))
    #expect(header.id == id.uuidString.lowercased())
    #expect(header.enqueuedAt == 1_700_000_000_000_000)
    #expect(header.messageType == "bench")
    #expect(header.payloadVersion == 3)
    for count in 0..<line.count {
      #expect(Envelope.fastDecode(line[..<count]) == nil)
    }
  }

  @Test func `A claimed name built from its pending name equals the one formatted in full`() {
    for level in AppGroupMailboxPriority.levels {
      for attempts in [0, 1, 8, 9, 10, 99, 100, PendingName.maxAttempts - 1] {
        let pending = PendingName(
          key: MessageKey(micros: 1_700_000_000_123_456, sequence: 987_654, level: level),
          id: UUID(), attempts: attempts)
        let token = UInt64.random(in: 1 ... .max)
        for lease in [0, 1_700_000_300_123_456, MessageKey.maxMicros, .max] as [Int64] {
          let built = ClaimedName(
            claiming: pending, named: pending.fileName, token: token, leaseUntilMicros: lease)
          let formatted = ClaimedName(
            message: PendingName(key: pending.key, id: pending.id, attempts: attempts + 1),
            token: token, leaseUntilMicros: lease)
          #expect(built == formatted)
          #expect(built.fileName == formatted.fileName)
          #expect(ClaimedName(parsing: built.fileName) == formatted)
        }
      }
    }
  }
}
