import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The Python implementation and the Swift library share one mailbox under load, with delayed
/// messages and with claims abandoned by a process that exited or was killed.
@Suite(.enabled(if: PythonSpool.available, "needs /usr/bin/python3 (scripts/test installs it)"))
struct PythonConcurrencyTests {
  @Test func `Two Python and two Swift producers with a consumer of each never exceed maxMessages`()
    throws
  {
    let container = try TemporaryContainer()
    let bound = 8
    let perProducer = 150
    let done = container.url.appendingPathComponent("done").path
    let limit = ["--max-messages", String(bound)]
    let producers =
      try ["py1", "py2"].map { prefix in
        try PythonSpool.start(
          "enqueue", container, ["--lines", "--retry-full", "60"] + limit,
          stdin: Data((0..<perProducer).map { "\"\(prefix)-\($0)\"\n" }.joined().utf8))
      }
      + ["sw1", "sw2"].map { prefix in
        try Processes.start(
          Processes.product("MailboxTestWorker"),
          [
            "interop-produce", container.url.path, "jobs", String(bound), prefix,
            String(perProducer),
          ])
      }
    let pythonConsumer = try PythonSpool.start("drain", container, ["--until-file", done] + limit)
    let swiftConsumer = try Processes.start(
      Processes.product("MailboxTestWorker"),
      ["interop-consume", container.url.path, "jobs", String(bound), done])
    // Sample the messages present (distinct ids across the three areas) while they run.
    var samples = 0
    var largest = 0
    while producers.contains(where: { $0.process.isRunning }) {
      largest = max(largest, messagesPresent(container))
      samples += 1
    }
    let finished = try producers.map { try $0.finish() }
    #expect(finished.map(\.status) == [0, 0, 0, 0])
    #expect(FileManager.default.createFile(atPath: done, contents: nil))
    let consumed = try [pythonConsumer.finish(), swiftConsumer.finish()]
    #expect(consumed.map(\.status) == [0, 0])
    #expect(samples > 10)
    // The producers overlapped (more than one message present at once) and the bound held.
    #expect((2...bound).contains(largest))
    let delivered =
      try PythonSpool.delivered(consumed[0]).map(\.payload) + consumed[1].lines
    let expected = ["py1", "py2", "sw1", "sw2"].flatMap { prefix in
      (0..<perProducer).map { "\"\(prefix)-\($0)\"" }
    }
    #expect(delivered.count == expected.count)
    #expect(Set(delivered) == Set(expected))
    // Each producer's messages leave in its own order (one consumer each sees a subsequence).
    for lines in [try PythonSpool.delivered(consumed[0]).map(\.payload), consumed[1].lines] {
      for prefix in ["py1", "py2", "sw1", "sw2"] {
        let numbers = lines.filter { $0.hasPrefix("\"\(prefix)-") }.map {
          Int($0.dropFirst(prefix.count + 2).dropLast()) ?? -1
        }
        #expect(numbers == numbers.sorted())
      }
    }
    try container.expectDepth(0)
  }

  @Test
  func `A message Python delays is not claimable before its due time and keeps its header date`()
    throws
  {
    let container = try TemporaryContainer()
    let produced = try PythonSpool.enqueue(["\"later\""], into: container, ["--delay", "1.5"])
    #expect(produced.map(\.outcome) == ["delayed"])
    let mailbox = try container.rawMailbox()
    let entry = try #require(try mailbox.inspector.entries(in: [.delayed]).first)
    let due = try #require(entry.dueAt)
    // Claim until it comes: no claim that ended before the due time may have returned it.
    var claims: [AppGroupRawMailbox.Claim] = []
    var claimedEarly = false
    #expect(
      try waitUntil(deadline: 30) {
        claims = try mailbox.claimPending()
        claimedEarly = claimedEarly || (!claims.isEmpty && Date() < due)
        return !claims.isEmpty
      })
    #expect(!claimedEarly)
    #expect(claims.map { $0.id.uuidString.lowercased() } == produced.map(\.id))
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["\"later\""])
    // The header keeps the real enqueue time, 1.5 s before the due time the name carries.
    let early = try #require(claims.first).enqueuedAt.timeIntervalSince(due)
    #expect(early < -1.4 && early > -1.6)
    #expect(try stateDepth(container) == 1)
  }

  @Test
  func
    `A message the library delays reaches Python when due, and a Python retry delay returns it to its place`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let first = try mailbox.enqueue(Data("\"first\"".utf8))
    let delayed = try mailbox.enqueue(Data("\"delayed\"".utf8), delay: 1.5)
    let due = try #require(delayed.notBefore)
    // Python claims "first" and gives it back with a retry delay of 1 s.
    let retried = try PythonSpool.delivered(
      PythonSpool.run("release-delay", container, ["--delay", "1"]))
    #expect(retried.map(\.id) == [first.id.uuidString.lowercased()])
    let dues = container.names("delayed").compactMap { Int64($0.prefix(16)) }
    #expect(dues.count == 2)
    // Python takes nothing before it is due (on a loaded machine this drain may run late).
    let early = try PythonSpool.delivered(PythonSpool.run("drain", container))
    let afterEarly = Int64(Date().timeIntervalSince1970 * 1_000_000)
    #expect(early.isEmpty || afterEarly >= dues.min() ?? 0)
    let later = try mailbox.enqueue(Data("\"later\"".utf8))
    // Once both delayed entries are due, a Python drain promotes and delivers what is left.
    let lastDue = dues.max() ?? 0
    #expect(waitUntil(deadline: 30) { Date().timeIntervalSince1970 * 1_000_000 > Double(lastDue) })
    let got = try early + PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(got.count == 3)
    #expect(Date() >= due)
    // "first" keeps its original place (before "later") and counts its second delivery.
    #expect(got.map(\.payload).filter { $0 != "\"delayed\"" } == ["\"first\"", "\"later\""])
    #expect(got.map(\.deliveryCount) == got.map { $0.payload == "\"first\"" ? 2 : 1 })
    let header = try #require(got.first { $0.payload == "\"delayed\"" })
    #expect(header.id == delayed.id.uuidString.lowercased())
    #expect(header.enqueuedAt < Int64(due.timeIntervalSince1970 * 1_000_000) - 1_400_000)
    #expect(later.wasAlreadyPresent == false)
    try container.expectDepth(0)
  }

  @Test
  func `A claim abandoned by an exited Python consumer is recovered by the library, and back`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox(limits: .init(claimTimeout: 1))
    let id = try mailbox.enqueue(Data("7".utf8)).id
    let held = try PythonSpool.delivered(
      PythonSpool.run("hold", container, ["--limit", "1", "--claim-timeout", "1"]))
    #expect(held.map(\.deliveryCount) == [1])
    #expect(container.names("claimed").count == 1)
    var claims: [AppGroupRawMailbox.Claim] = []
    #expect(
      try waitUntil(deadline: 30) {
        claims = try mailbox.claimPending()
        return !claims.isEmpty
      })
    #expect(claims.map(\.id) == [id])
    #expect(claims.map(\.deliveryCount) == [2])
    #expect(claims.map { String(decoding: $0.payload, as: UTF8.self) } == ["7"])

    // The library's claim now dies with a killed Swift process: Python recovers it.
    let other = try TemporaryContainer()
    try other.rawMailbox().enqueue(Data("8".utf8))
    let holder = try Processes.start(
      Processes.product("MailboxTestWorker"), ["core-hold", other.url.path, "jobs", "1", "1"])
    #expect(waitUntil(deadline: 60) { other.names("claimed").count == 1 })
    holder.signal(SIGKILL)
    _ = try holder.finish()
    let recovered = try PythonSpool.drainUntilDelivered(other, ["--claim-timeout", "1"])
    #expect(recovered.map(\.payload) == ["8"])
    #expect(recovered.map(\.deliveryCount) == [2])
    try other.expectDepth(0)
  }
}

/// The messages present, sampled under the namespace lock (as producers take it), listing
/// `claimed/` before `pending/`: the only move made without the lock is a claim (pending to
/// claimed), which can then only hide a message from the sample, never count one twice.
private func messagesPresent(_ container: TemporaryContainer) -> Int {
  let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs")
  return DepthSample.depth(
    of: ["claimed", "delayed", "pending"].map { namespace.appendingPathComponent($0).path },
    lock: namespace.appendingPathComponent("state").path)
}
