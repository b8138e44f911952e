import Foundation
import Testing

@testable import AppGroupMailbox

/// Payload versions between the Python implementation and the library: each writes the
/// version the other reads, byte for byte the same header, and rejects the same bad ones.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonPayloadVersionTests {
  static let message = #"{"number":2,"label":"two"}"#

  @Test func `A Python producer's version-2 message is decoded by a version-2 Swift consumer`()
    throws
  {
    let container = try TemporaryContainer()
    let produced = try PythonSpool.enqueue(
      [Self.message], into: container, ["--type", "Job", "--payload-version", "2"])
    #expect(produced.map(\.outcome) == ["published"])
    let name = try #require(container.names("pending").first)
    let bytes = try Data(contentsOf: container.area("pending").appendingPathComponent(name))
    let header = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    #expect(header.hasSuffix(#","messageType":"Job","payloadVersion":2}"#), "\(header)")
    let jobs = try container.mailbox(JobTwo.self, messageType: "Job")
    #expect(try jobs.claimPending().map(\.message) == [JobTwo(number: 2, label: "two")])
  }

  @Test func `The Python consumer reports the version a Swift producer recorded`() throws {
    let container = try TemporaryContainer()
    let jobs = try container.mailbox(JobTwo.self, messageType: "Job")
    try jobs.enqueue(JobTwo(number: 2, label: "two"))
    try container.rawMailbox().enqueue(Data("1".utf8))
    let delivered = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(delivered.map(\.payloadVersion) == [2, 1])
    #expect(delivered.count == 2)
    let decoded = try JSONDecoder().decode(
      JobTwo.self, from: Data(try #require(delivered.first).payload.utf8))
    #expect(decoded == JobTwo(number: 2, label: "two"))
    #expect(delivered.last?.payload == "1")
  }

  @Test(arguments: ["0", "-3", "\"2\"", "true", "2.5"])
  func `A header whose payloadVersion is not a positive integer is malformed to both`(
    version: String
  ) throws {
    let container = try TemporaryContainer()
    try container.rawMailbox().enqueue(Data("1".utf8))
    let name = try #require(container.names("pending").first)
    let url = container.area("pending").appendingPathComponent(name)
    var text = try String(contentsOf: url, encoding: .utf8)
    text = text.replacingOccurrences(
      of: #""messageType":""}"#, with: #""messageType":"","payloadVersion":\#(version)}"#)
    try Data(text.utf8).write(to: url)
    #expect(text.contains("payloadVersion"))
    #expect(
      try container.rawMailbox().inspector.envelope(name)?.unreadableReason == "malformed")
    let drained = try PythonSpool.run("drain", container)
    #expect(drained.lines.isEmpty)
    #expect(container.names("pending").isEmpty)
    #expect(container.names("quarantine").count == 1)
  }
}
