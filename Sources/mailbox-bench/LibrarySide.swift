import AppGroupMailbox
import Foundation

/// The library under test, driven with the same workload as the baseline. Messages are
/// `String`s whose JSON encoding is exactly the requested size.
struct LibrarySide {
  let mailbox: AppGroupMailbox<String>

  static let namespace = "bench"

  /// Opens (creating) the mailbox in `container`.
  init(container: String, durability: AppGroupMailbox<String>.Durability) throws {
    mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: container), namespace: Self.namespace,
      limits: .init(maxMessages: 10_000_000, maxPayloadBytes: 1 << 20), messageType: "bench",
      durability: durability)
  }

  /// A message whose JSON encoding (with its quotes) is `size` bytes.
  static func body(size: Int) -> String { String(repeating: "x", count: max(0, size - 2)) }

  /// Enqueues `count` messages; returns elapsed nanoseconds.
  func timeEnqueue(count: Int, size: Int) throws -> Int64 {
    let body = Self.body(size: size)
    let start = nowNanoseconds()
    for _ in 0..<count { try mailbox.enqueue(body) }
    return nowNanoseconds() - start
  }

  /// Claims (one per call, as a consumer handling one at a time does), reads and acknowledges
  /// `count` messages; returns elapsed nanoseconds.
  func timeConsume(count: Int) throws -> Int64 {
    let start = nowNanoseconds()
    for _ in 0..<count {
      guard let claim = try mailbox.claimPending(limit: 1).first else {
        throw BenchError.failed("library ran empty")
      }
      try claim.acknowledge()
    }
    return nowNanoseconds() - start
  }

  /// `count` full cycles: enqueue, claim, read, acknowledge; returns elapsed nanoseconds.
  func timeCycle(count: Int, size: Int) throws -> Int64 {
    let body = Self.body(size: size)
    let start = nowNanoseconds()
    for _ in 0..<count {
      try mailbox.enqueue(body)
      guard let claim = try mailbox.claimPending(limit: 1).first else {
        throw BenchError.failed("library lost a message")
      }
      try claim.acknowledge()
    }
    return nowNanoseconds() - start
  }

  /// Claims and acknowledges until nothing is pending and `donePath` exists; returns the count.
  func consumeUntil(donePath: String) throws -> Int {
    var consumed = 0
    while true {
      let claims = try mailbox.claimPending(limit: 1)
      for claim in claims { try claim.acknowledge() }
      consumed += claims.count
      if claims.isEmpty, FileManager.default.fileExists(atPath: donePath) {
        let last = try mailbox.claimPending(limit: 1)
        for claim in last { try claim.acknowledge() }
        if last.isEmpty { return consumed }
        consumed += last.count
      }
    }
  }
}
