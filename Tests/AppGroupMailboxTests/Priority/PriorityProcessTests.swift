import Foundation
import Testing

@testable import AppGroupMailbox

/// Priority levels across processes (issue 17 item 5): 4 producer processes, one consumer
/// process.
@Suite struct PriorityProcessTests {
  static let producers = 4
  static let perProducer = 250

  /// A pending file as its name and bytes say, read without the library's name parser: the
  /// level from a `p<level>-` prefix (5 without one), the insertion sequence, the payload text.
  struct Stored {
    var level: Int
    var sequence: UInt64
    var text: String
  }

  /// Reads `pending/` of `container` by hand.
  static func stored(_ container: TemporaryContainer) throws -> [Stored] {
    try container.names("pending").map { name in
      var fields = name.split(separator: "-", omittingEmptySubsequences: false)
      var level = 5
      if fields[0].hasPrefix("p") {
        level = try #require(Int(fields[0].dropFirst()))
        fields.removeFirst()
      }
      let bytes = try Data(contentsOf: container.area("pending").appendingPathComponent(name))
      let body = try #require(bytes.firstIndex(of: 0x0A))
      let text = String(decoding: bytes[(body + 1)...], as: UTF8.self)
      return Stored(
        level: level, sequence: try #require(UInt64(fields[1])),
        text: text.trimmingCharacters(in: ["\""]))
    }
  }

  /// Starts the producers, releases them together and returns each one's lines
  /// ("<level> <text>" in the order its enqueues returned), then the pending files, then what
  /// the consumer process printed.
  static func run(_ container: TemporaryContainer) throws -> (
    produced: [[String]], stored: [Stored], consumed: [String], failures: [String]
  ) {
    let go = container.url.appendingPathComponent("go").path
    let worker = Processes.product("MailboxTestWorker")
    var running: [RunningProcess] = []
    var ready: [String] = []
    for producer in 0..<producers {
      let flag = container.url.appendingPathComponent("ready-\(producer)").path
      ready.append(flag)
      running.append(
        try Processes.start(
          worker,
          [
            "priority-produce", container.url.path, "jobs", flag, go, "\(producer)",
            "\(perProducer)",
          ]))
    }
    var failures: [String] = []
    if !waitUntil(
      deadline: 120, { ready.allSatisfy { FileManager.default.fileExists(atPath: $0) } })
    {
      failures.append("producers not ready")
    }
    if !FileManager.default.createFile(atPath: go, contents: nil) { failures.append("no go") }
    var produced: [[String]] = []
    for process in running {
      let finished = try process.finish(deadline: 300)
      if finished.status != 0 { failures.append(finished.stderr) }
      produced.append(finished.lines)
    }
    let stored = try stored(container)
    let consumer = try Processes.runWorker(
      ["priority-consume", container.url.path, "jobs"], deadline: 300)
    if consumer.status != 0 { failures.append(consumer.stderr) }
    return (produced, stored, consumer.lines, failures)
  }

  @Test
  func `1,000 messages of mixed levels from 4 processes come out level by level, FIFO within each`()
    async throws
  {
    let container = try TemporaryContainer()
    let (produced, stored, consumed, failures) = try await offCooperativePool {
      try Self.run(container)
    }
    #expect(failures == [])
    #expect(produced.map(\.count) == [250, 250, 250, 250])
    #expect(stored.count == 1_000)
    var levelOf: [String: Int] = [:]
    for line in produced.joined() {
      let fields = line.split(separator: " ")
      levelOf[String(fields[1])] = Int(fields[0])
    }
    // Each name carries the level its producer gave, and each level holds 100 messages.
    #expect(stored.allSatisfy { levelOf[$0.text] == $0.level })
    #expect(
      (0...9).map { level in stored.filter { $0.level == level }.count }
        == Array(repeating: 100, count: 10))

    // Exactly the order of the names: level 9 first down to 0, by insertion sequence within a
    // level (the sequence was handed out under the lock, across the 4 processes).
    let expected = stored.sorted { ($1.level, $0.sequence) < ($0.level, $1.sequence) }.map(\.text)
    #expect(consumed.count == 1_000)
    #expect(consumed == expected)
    #expect(
      consumed.map { levelOf[$0] ?? -1 }
        == (0...9).reversed().flatMap { Array(repeating: $0, count: 100) })
    // FIFO within a level as each producer saw it: its messages of one level come out in the
    // order its enqueues returned.
    for (producer, lines) in produced.enumerated() {
      for level in 0...9 {
        let mine = lines.filter { $0.hasPrefix("\(level) ") }.map { String($0.dropFirst(2)) }
        let out = consumed.filter { $0.hasPrefix("P\(producer)-") && levelOf[$0] == level }
        #expect(mine.count == 25)
        #expect(out == mine, "producer \(producer), level \(level)")
      }
    }
    #expect(container.names("pending") == [] && container.names("claimed") == [])
  }
}
