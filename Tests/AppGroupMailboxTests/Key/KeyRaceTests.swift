import Foundation
import Testing

@testable import AppGroupMailbox

/// Replace by key (issue 17 item 2) raced by 8 producer processes.
@Suite struct KeyRaceTests {
  /// One line a producer printed.
  struct Line {
    var key: String
    var outcome: String
    var id: String
    var text: String
  }

  static let producers = 8
  static let keys = 3
  static let perProducer = 60

  /// Starts 8 `key-produce` workers, releases them together and returns their lines, with how
  /// many listings of `pending/` saw each count once all keys had a pending message.
  func race(_ container: TemporaryContainer, policy: String) throws -> ([Line], [Int: Int]) {
    let go = container.url.appendingPathComponent("go").path
    let worker = Processes.product("MailboxTestWorker")
    var running: [RunningProcess] = []
    var ready: [String] = []
    for producer in 0..<Self.producers {
      let flag = container.url.appendingPathComponent("ready-\(producer)").path
      ready.append(flag)
      running.append(
        try Processes.start(
          worker,
          [
            "key-produce", container.url.path, "jobs", flag, go, "p\(producer)", "\(Self.keys)",
            "\(Self.perProducer)", policy,
          ]))
    }
    let allReady = waitUntil(deadline: 120) {
      ready.allSatisfy { FileManager.default.fileExists(atPath: $0) }
    }
    #expect(allReady)
    let observer = PendingObserver(container, settled: Self.keys)
    #expect(FileManager.default.createFile(atPath: go, contents: nil))
    var lines: [Line] = []
    for process in running {
      let finished = try process.finish(deadline: 300)
      #expect(finished.status == 0, "\(finished.stderr)")
      lines += finished.lines.map { line in
        let fields = line.split(separator: " ").map(String.init)
        return Line(key: fields[0], outcome: fields[1], id: fields[2], text: fields[3])
      }
    }
    let seen = observer.stop()
    #expect(lines.count == Self.producers * Self.perProducer)
    return (lines, seen)
  }

  @Test
  func `8 producers racing replace leave exactly one pending message per key, never zero or two`()
    async throws
  {
    let container = try TemporaryContainer()
    let (lines, seen) = try await offCooperativePool { try race(container, policy: "replace") }
    let files = try container.pendingFiles()
    #expect(files.count == Self.keys)
    #expect(Set(files.compactMap(\.key)) == ["k0", "k1", "k2"])
    for key in ["k0", "k1", "k2"] {
      let mine = lines.filter { $0.key == key }
      // The first enqueue under the lock publishes; every later one replaces that message.
      #expect(mine.filter { $0.outcome == "enqueued" }.count == 1)
      #expect(mine.filter { $0.outcome == "replaced" }.count == mine.count - 1)
      #expect(Set(mine.map(\.id)).count == 1)
      let file = try #require(files.first { $0.key == key })
      #expect(file.id == mine[0].id && file.name.id.uuidString.lowercased() == file.id)
      #expect(mine.contains { "\"\($0.text)\"" == file.message })
      #expect(container.indexedID(key) == file.id)
    }
    // Every listing after all three keys had a message saw exactly three: never zero or two
    // for a key.
    #expect(Set(seen.keys) == [Self.keys])
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 3, 3])
    #expect(container.names("tmp").isEmpty)
  }

  @Test func `8 producers racing keep leave the first message of each key`() async throws {
    let container = try TemporaryContainer()
    let (lines, _) = try await offCooperativePool { try race(container, policy: "keep") }
    let files = try container.pendingFiles()
    #expect(files.count == Self.keys)
    for key in ["k0", "k1", "k2"] {
      let mine = lines.filter { $0.key == key }
      let first = mine.filter { $0.outcome == "enqueued" }
      try #require(first.count == 1)
      #expect(mine.filter { $0.outcome == "kept" }.count == mine.count - 1)
      #expect(Set(mine.map(\.id)) == [first[0].id])
      let file = try #require(files.first { $0.key == key })
      #expect(file.id == first[0].id)
      #expect(file.message == "\"\(first[0].text)\"")
    }
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 3, 3])
    #expect(container.names("tmp").isEmpty)
  }
}
