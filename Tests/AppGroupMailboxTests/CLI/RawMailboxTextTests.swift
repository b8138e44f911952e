import Foundation
import Testing

@testable import AppGroupMailbox

/// The untyped mailbox stores only UTF-8 JSON text without a byte order mark, whoever the
/// producer, so every line `mailboxctl drain` prints parses as JSON (C23, for library callers).
@Suite struct RawMailboxTextTests {
  @Test func `A byte order mark, UTF-16 or a NUL byte is refused and nothing is written`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let refused: [[UInt8]] = [
      [0xEF, 0xBB, 0xBF] + Array("{\"a\":1}".utf8),  // UTF-8 with a BOM
      [0xFF, 0xFE, 0x31, 0x00],  // UTF-16LE with a BOM: "1"
      [0x31, 0x00],  // UTF-16LE without one
      [0x00, 0x00, 0x00, 0x31],  // UTF-32BE
      Array("\"caf".utf8) + [0xE9] + Array("\"".utf8),  // Latin-1
    ]
    for bytes in refused {
      #expect(throws: AppGroupMailboxError.decodingFailure, "\(bytes)") {
        try mailbox.validate(Data(bytes))
      }
      #expect(throws: AppGroupMailboxError.decodingFailure, "\(bytes)") {
        try mailbox.enqueue(Data(bytes))
      }
    }
    #expect(container.names("pending").isEmpty && container.names("tmp").isEmpty)
    try mailbox.enqueue(Data("\"caf\u{E9} \u{FEFF}\"".utf8))  // a BOM character inside a string
    #expect(container.names("pending").count == 1)
  }
}
