import AppGroupMailbox
import Foundation

/// The untyped path (``AppGroupRawMailbox``): claims hand over the payload's bytes without
/// decoding them, as `mailboxctl` passes messages on. Same spool layout as ``LibrarySide``.
struct RawSide {
  let mailbox: AppGroupRawMailbox

  /// Opens (creating) the mailbox of ``LibrarySide`` in `container`, untyped.
  init(container: String, durability: AppGroupMailboxDurability) throws {
    mailbox = try AppGroupRawMailbox(
      containerURL: URL(fileURLWithPath: container), namespace: LibrarySide.namespace,
      limits: .init(maxMessages: 10_000_000, maxPayloadBytes: 1 << 20), durability: durability)
  }

  /// Claims (one per call), reads the payload's bytes and acknowledges `count` messages;
  /// returns elapsed nanoseconds.
  func timeConsume(count: Int) throws -> Int64 {
    let start = nowNanoseconds()
    var bytes = 0
    for _ in 0..<count {
      guard let claim = try mailbox.claimPending(limit: 1).first else {
        throw BenchError.failed("raw mailbox ran empty")
      }
      bytes &+= claim.payload.count
      try claim.acknowledge()
    }
    let elapsed = nowNanoseconds() - start
    guard bytes > 0 else { throw BenchError.failed("raw mailbox read nothing") }
    return elapsed
  }
}
