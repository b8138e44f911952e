import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Replace by key (issue 17 item 2) within one process.
@Suite struct KeyTests {
  @Test func `A claimed message with the key is untouched; the new one waits behind it`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(String.self)
    let first = try mailbox.enqueue("first", key: "widget", onConflict: .replace)
    guard case .enqueued(let firstID) = first else { throw KeyFailure(first) }
    let claim = try #require(try mailbox.claimPending().first)
    #expect(claim.id == firstID)
    let second = try mailbox.enqueue("second", key: "widget", onConflict: .replace)
    guard case .enqueued(let secondID) = second else { throw KeyFailure(second) }
    #expect(secondID != firstID)
    #expect(claim.message == "first")
    #expect(container.names("claimed").count == 1)
    let third = try mailbox.enqueue("third", key: "widget", onConflict: .replace)
    #expect(third == .replaced(secondID))
    try claim.acknowledge()
    let next = try mailbox.claimPending()
    #expect(next.map(\.message) == ["third"])
    #expect(next.map(\.id) == [secondID])
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(2)) == [1, 2])
    try container.expectDepth(1)
  }

  /// The key's index entry names an id; a message enqueued later under that id without the key
  /// (an import after the keyed one was acknowledged) was replaced (lost) or kept in the key's
  /// stead, with success (found by an adversarial review).
  @Test(arguments: [AppGroupMailboxKeyPolicy.replace, .keep])
  func `A message that only reuses the id the key's index names does not hold the key`(
    policy: AppGroupMailboxKeyPolicy
  ) throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let keyed = try mailbox.enqueue(Data("\"A\"".utf8), key: "K", onConflict: .replace)
    for claim in try mailbox.claimPending() { try claim.acknowledge() }
    try mailbox.enqueue(Data("\"B\"".utf8), id: keyed.id)
    let outcome = try mailbox.enqueue(Data("\"C\"".utf8), key: "K", onConflict: policy)
    guard case .enqueued(let newID) = outcome else { throw KeyFailure(outcome) }
    #expect(newID != keyed.id)
    // The index now names the new keyed message, which holds the key.
    #expect(
      try mailbox.enqueue(Data("\"D\"".utf8), key: "K", onConflict: .keep) == .kept(newID))
    #expect(
      try mailbox.claimPending().map { String(decoding: $0.payload, as: UTF8.self) } == [
        "\"B\"", "\"C\"",
      ])
  }

  @Test func `Replace keeps the pending message's id, place and name; keep writes nothing`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    try mailbox.enqueue(Data("0".utf8))
    let keyed = try mailbox.enqueue(Data("1".utf8), key: "a:b", onConflict: .keep)
    try mailbox.enqueue(Data("2".utf8))
    let before = container.names("pending")
    #expect(try mailbox.enqueue(Data("3".utf8), key: "a:b", onConflict: .keep) == .kept(keyed.id))
    #expect(try container.pendingFiles().map(\.message) == ["0", "1", "2"])
    #expect(
      try mailbox.enqueue(Data("4".utf8), key: "a:b", onConflict: .replace) == .replaced(keyed.id))
    #expect(container.names("pending") == before)
    #expect(try container.pendingFiles().map(\.message) == ["0", "4", "2"])
    #expect(
      try mailbox.claimPending().map { String(decoding: $0.payload, as: UTF8.self) } == [
        "0", "4", "2",
      ])
    #expect(container.names("tmp").isEmpty)
  }

  @Test(arguments: [AppGroupMailboxKeyPolicy.keep, .replace])
  func `A pending message with the key that will never be delivered is no holder`(
    policy: AppGroupMailboxKeyPolicy
  ) throws {
    // Expired: kept, or replaced under its name (keeping its enqueue time), the new message
    // was deleted unseen by the next claim, after the enqueue had said "kept" or "replaced".
    let (container, clock, recorder) = try TemporaryContainer.withClockAndDiagnostics()
    let expiring: AppGroupMailbox<String> = try container.mailbox(
      limits: .init(messageLifetime: 60), clock: clock, diagnostics: recorder)
    let old = try expiring.enqueue("old", key: "k", onConflict: policy)
    clock.advance(61)
    let fresh = try expiring.enqueue("new", key: "k", onConflict: policy)
    guard case .enqueued(let freshID) = fresh else { throw KeyFailure(fresh) }
    #expect(freshID != old.id)
    // Taken out by the enqueue, as a claim would: at most one pending message has the key.
    #expect(container.names("pending").count == 1)
    #expect(recorder.all == [.expiredMessageRemoved])
    #expect(try expiring.claimPending().map(\.message) == ["new"])
    // A dead letter by its delivery count: replaced, it kept that count and was quarantined.
    let other = try TemporaryContainer()
    let once: AppGroupMailbox<String> = try other.mailbox(
      limits: .init(maxDeliveryAttempts: 1), clock: clock, diagnostics: recorder)
    let first = try once.enqueue("first", key: "k", onConflict: policy)
    try #require(try once.claimPending().first).release()
    let second = try once.enqueue("second", key: "k", onConflict: policy)
    guard case .enqueued(let secondID) = second else { throw KeyFailure(second) }
    #expect(secondID != first.id)
    #expect(other.quarantineReasons() == ["deadletter"])
    // A bound raised afterwards does not bring the old message back beside the new one.
    try once.updateSettings { $0.maxDeliveryAttempts = 5 }
    let delivered = try once.claimPending()
    #expect(delivered.map(\.message) == ["second"])
    #expect(delivered.map(\.deliveryCount) == [1])
    #expect(other.quarantined().map(\.id) == [first.id])
    #expect(other.quarantineReasons() == ["deadletter"])
  }

  @Test func `A symlink or FIFO in keys/ counts as no entry and is replaced, its target untouched`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.mailbox(String.self)
    _ = try mailbox.enqueue("made keys/", key: "first", onConflict: .replace)
    let keys = container.url.appendingPathComponent("AppGroupMailbox/jobs/keys").path
    let target = container.url.appendingPathComponent("secret").path
    #expect(FileManager.default.createFile(atPath: target, contents: Data("secret\n".utf8)))
    #expect(symlink(target, keys + "/linked") == 0)
    #expect(mkfifo(keys + "/fifo", 0o600) == 0)
    for key in ["linked", "fifo"] {
      let outcome = try mailbox.enqueue("for \(key)", key: key, onConflict: .replace)
      guard case .enqueued(let id) = outcome else {
        Issue.record("\(key): \(outcome)")
        continue
      }
      #expect(container.indexedID(key) == id.uuidString.lowercased(), "\(key)")
    }
    #expect(try String(contentsOfFile: target, encoding: .utf8) == "secret\n")
  }

  @Test func `An invalid key is refused before anything is written`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    for key in ["", ".hidden", "a/b", "a b", String(repeating: "k", count: 129)] {
      #expect(throws: AppGroupMailboxError.self) {
        try mailbox.enqueue(Data("1".utf8), key: key, onConflict: .replace)
      }
    }
    #expect(container.names("pending").isEmpty)
    #expect(
      try mailbox.enqueue(
        Data("1".utf8), key: String(repeating: "k", count: 128), onConflict: .keep
      ).id != UUID())
  }

  @Test func `A keyed message reads as any other; a stale index entry is passed over`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let first = try mailbox.enqueue(Data("{\"n\":1}".utf8), key: "k", onConflict: .keep)
    let file = try #require(try container.pendingFiles().first)
    #expect(file.key == "k")
    let claim = try #require(try mailbox.claimPending().first)
    #expect(String(decoding: claim.payload, as: UTF8.self) == "{\"n\":1}")
    try claim.acknowledge()
    #expect(container.indexedID("k") == first.id.uuidString.lowercased())
    let second = try mailbox.enqueue(Data("2".utf8), key: "k", onConflict: .keep)
    guard case .enqueued = second else { throw KeyFailure(second) }
    #expect(container.indexedID("k") == second.id.uuidString.lowercased())
  }
}

/// The two ways a replacement cannot swap: the pending message was claimed in the instant
/// before, or the filesystem lacks `RENAME_EXCHANGE`.
@Suite struct KeyReplacementFallbackTests {
  @Test
  func
    `A claim just before the swap leaves the claimed file whole; the new message waits behind it`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let old = try mailbox.enqueue(Data("\"old\"".utf8), key: "k", onConflict: .replace)
    let pending = try #require(container.names("pending").first)
    let claimedName = try #require(PendingName(parsing: pending)).claimedForTest.fileName
    let pendingURL = container.area("pending").appendingPathComponent(pending)
    let claimedURL = container.area("claimed").appendingPathComponent(claimedName)
    // A consumer's rename, made in the instant between the lookup and the swap.
    let (outcome, unfired) = try FaultInjection.withRules([
      .init(call: "renameat2", errno: 0) {
        _ = rename(pendingURL.path, claimedURL.path)
      }
    ]) { try mailbox.enqueue(Data("\"new\"".utf8), key: "k", onConflict: .replace) }
    #expect(unfired.isEmpty)
    guard case .enqueued(let newID) = outcome else { throw KeyFailure(outcome) }
    #expect(newID != old.id)
    #expect(try String(contentsOf: claimedURL, encoding: .utf8).hasSuffix("\n\"old\""))
    #expect(try container.pendingFiles().map(\.message) == ["\"new\""])
    #expect(try container.pendingFiles().map(\.id) == [newID.uuidString.lowercased()])
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(3)) == [1, 2, 2])
    #expect(container.names("tmp").isEmpty)
  }

  @Test func `Without RENAME_EXCHANGE the new message is published, then the old one unlinked`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let old = try mailbox.enqueue(Data("\"old\"".utf8), key: "k", onConflict: .replace)
    let (outcome, unfired) = try FaultInjection.withRules([
      .init(call: "renameat2", errno: EINVAL)
    ]) { try mailbox.enqueue(Data("\"new\"".utf8), key: "k", onConflict: .replace) }
    #expect(unfired.isEmpty)
    guard case .replaced(let newID) = outcome else { throw KeyFailure(outcome) }
    #expect(newID != old.id)
    #expect(try container.pendingFiles().map(\.message) == ["\"new\""])
    #expect(Array(try IndexedClaimTests.stateFields(container).prefix(2)) == [1, 2])
    try container.expectDepth(1)
    #expect(container.indexedID("k") == newID.uuidString.lowercased())
    #expect(container.names("tmp").isEmpty)
  }

  /// Unlinking the old message before publishing the new one lost it whenever a later step of
  /// the enqueue failed (found by an adversarial review: an I/O error rewriting the new file).
  @Test func `A failed replace without RENAME_EXCHANGE keeps the pending message`() throws {
    let container = try TemporaryContainer()
    let mailbox: AppGroupMailbox<String> = try container.mailbox()
    try mailbox.enqueue("old", key: "k", onConflict: .replace)
    let (thrown, unfired) = FaultInjection.withRules([
      .init(call: "renameat2", errno: EINVAL, count: 1),  // the exchange
      .init(call: "ftruncate", errno: EIO, skip: 1, count: 1),  // the rewrite with its own id
    ]) { () -> (any Error)? in
      do {
        try mailbox.enqueue("new", key: "k", onConflict: .replace)
        return nil
      } catch {
        return error
      }
    }
    #expect(unfired.isEmpty)
    #expect(thrown != nil)
    #expect(try mailbox.claimPending().map(\.message) == ["old"])
    #expect(container.names("tmp").isEmpty)
  }
}

extension PendingName {
  /// The claimed name a consumer's claim of this message would take (fixed token, lease in an
  /// hour).
  var claimedForTest: ClaimedName {
    ClaimedName(
      message: PendingName(key: key, id: id, attempts: attempts + 1), token: 0xabc,
      leaseUntilMicros: Int64(Date().timeIntervalSince1970 * 1_000_000) + 3_600_000_000)
  }
}

struct KeyFailure: Error, CustomStringConvertible {
  var outcome: AppGroupMailboxKeyedOutcome
  init(_ outcome: AppGroupMailboxKeyedOutcome) { self.outcome = outcome }
  var description: String { "unexpected outcome \(outcome)" }
}
