import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// The derivation of lifecycle events from inotify events, without a file system: names built
/// as the library names files, times given in microseconds.
@Suite struct EventDerivationTests {
  static let id = UUID(uuidString: "3f2a0000-0000-4000-8000-000000000001")!
  static let now: Int64 = 1_795_000_000_000_000
  static let lifetime: Int64 = 86_400_000_000

  static func pending(_ attempts: Int, at micros: Int64 = now - 1_000_000) -> String {
    PendingName(key: MessageKey(micros: micros, sequence: 7), id: id, attempts: attempts).fileName
  }

  static func claimed(_ attempts: Int, lease: Int64, at micros: Int64 = now - 1_000_000) -> String {
    ClaimedName(
      message: PendingName(
        key: MessageKey(micros: micros, sequence: 7), id: id, attempts: attempts),
      token: 0xabc, leaseUntilMicros: lease
    ).fileName
  }

  static func event(_ mask: Int32, _ name: String?, cookie: UInt32 = 0) -> InotifyEvent {
    InotifyEvent(watch: 1, mask: UInt32(bitPattern: mask), cookie: cookie, name: name)
  }

  func derive(_ batch: [(EventArea?, InotifyEvent)], _ derivation: inout EventDerivation)
    -> [AppGroupMailboxEvent.Kind]
  {
    derivation.derive(batch, now: Self.now).map(\.kind)
  }

  @Test func `Paired halves of renames give claimed, released, renewed and promoted`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let lease = Self.now + 60_000_000
    let events = derivation.derive(
      [
        (.pending, Self.event(IN_MOVED_TO, Self.pending(0))),
        (.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 1)),
        (.claimed, Self.event(IN_MOVED_TO, Self.claimed(1, lease: lease), cookie: 1)),
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(1, lease: lease), cookie: 2)),
        (.claimed, Self.event(IN_MOVED_TO, Self.claimed(1, lease: lease + 1), cookie: 2)),
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(1, lease: lease + 1), cookie: 3)),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(1), cookie: 3)),
        (.delayed, Self.event(IN_MOVED_FROM, "1795000000000000-" + Self.pending(1), cookie: 4)),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(1), cookie: 4)),
      ], now: Self.now)
    #expect(events.map(\.kind) == [.enqueued, .claimed, .renewed, .released, .promoted])
    #expect(events.map(\.deliveryCount) == [0, 1, 1, 1, 1])
    #expect(events.allSatisfy { $0.id == Self.id })
    #expect(events.allSatisfy { $0.date == Date(timeIntervalSince1970: 1_795_000_000) })
  }

  @Test func `A keyed replacement's exchange gives a second enqueued and no removal`() {
    // renameat2(RENAME_EXCHANGE) of tmp/<x> and pending/<name>: in pending/, the new file's
    // IN_MOVED_TO then the old file's IN_MOVED_FROM, each paired only with a half in tmp/.
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let lease = Self.now + 60_000_000
    #expect(
      derive(
        [
          (.pending, Self.event(IN_MOVED_TO, Self.pending(0), cookie: 1)),
          (.pending, Self.event(IN_MOVED_TO, Self.pending(0), cookie: 2)),
          (.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 3)),
        ], &derivation) == [.enqueued, .enqueued])
    #expect(
      derive(
        [
          (.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 4)),
          (.claimed, Self.event(IN_MOVED_TO, Self.claimed(1, lease: lease), cookie: 4)),
        ], &derivation) == [.claimed])
    #expect(derive([], &derivation) == [])
    // A departure after an arrival of another name is not an exchange: it left the areas.
    #expect(
      derive(
        [
          (.pending, Self.event(IN_MOVED_TO, Self.pending(1), cookie: 5)),
          (.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 6)),
        ], &derivation) == [.enqueued])
    #expect(derive([], &derivation) == [.removed])
  }

  @Test func `A claim back in pending is recovered after its lease, put back with its old count`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let over = Self.now - 1
    let farAhead = Self.now + AppGroupMailboxLimits.forgedLeaseHorizonMicros + 1
    let kinds = derive(
      [
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(2, lease: over), cookie: 1)),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(2), cookie: 1)),
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(2, lease: farAhead), cookie: 2)),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(2), cookie: 2)),
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(2, lease: Self.now + 1), cookie: 3)),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(1), cookie: 3)),
      ], &derivation)
    #expect(kinds == [.recovered, .recovered, .putBack])
  }

  @Test func `Unlinks are acknowledged, expired or removed by lease and lifetime`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let old = Self.now - Self.lifetime
    let kinds = derive(
      [
        (.claimed, Self.event(IN_DELETE, Self.claimed(1, lease: Self.now + 1))),
        (.claimed, Self.event(IN_DELETE, Self.claimed(1, lease: Self.now - 1))),
        (.claimed, Self.event(IN_DELETE, Self.claimed(1, lease: Self.now - 1, at: old))),
        (.claimed, Self.event(IN_DELETE, Self.claimed(1, lease: Self.now + 1, at: old))),
        (.pending, Self.event(IN_DELETE, Self.pending(0, at: old))),
        (.pending, Self.event(IN_DELETE, Self.pending(0))),
        (.delayed, Self.event(IN_DELETE, "1795000000000000-" + Self.pending(0, at: old))),
        (.quarantine, Self.event(IN_DELETE, "1795000000000000-malformed-unknown-00000001.q")),
        (.pending, Self.event(IN_DELETE, "not a message name")),
      ], &derivation)
    #expect(
      kinds == [
        .acknowledged, .acknowledged, .expired, .acknowledged, .expired, .removed, .expired,
      ])
  }

  @Test func `Quarantine arrivals carry their reason, and dead letters their own kind`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let events = derivation.derive(
      [
        (.pending, Self.event(IN_MOVED_FROM, Self.pending(3), cookie: 1)),
        (
          .quarantine,
          Self.event(
            IN_MOVED_TO,
            "1795000000000000-deadletter-\(Self.id.uuidString.lowercased())-0000abcd.q",
            cookie: 1)
        ),
        (
          .quarantine,
          Self.event(IN_MOVED_TO, "1795000000000000-foreign-unknown-00000001.q", cookie: 2)
        ),
        (
          .quarantine,
          Self.event(
            IN_MOVED_FROM,
            "1795000000000000-malformed-\(Self.id.uuidString.lowercased())-00000002.q",
            cookie: 3)
        ),
        (.pending, Self.event(IN_MOVED_TO, Self.pending(0), cookie: 3)),
      ], now: Self.now)
    #expect(events.map(\.kind) == [.deadLettered, .quarantined, .requeued])
    #expect(events.map(\.quarantineReason) == ["deadletter", "foreign", nil])
    #expect(events.map(\.id) == [Self.id, nil, Self.id])
  }

  @Test func `A release with a delay and a delayed enqueue carry the due time`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let delayed = "1795000005000000-" + Self.pending(1)
    let events = derivation.derive(
      [
        (.claimed, Self.event(IN_MOVED_FROM, Self.claimed(1, lease: Self.now + 1), cookie: 1)),
        (.delayed, Self.event(IN_MOVED_TO, delayed, cookie: 1)),
        (.delayed, Self.event(IN_MOVED_TO, delayed, cookie: 2)),
      ], now: Self.now)
    #expect(events.map(\.kind) == [.released, .delayed])
    #expect(
      events.map(\.dueAt) == Array(repeating: Date(timeIntervalSince1970: 1_795_000_005), count: 2))
  }

  @Test
  func `A half whose partner misses the next read left the areas, and overflow is reported once`() {
    var derivation = EventDerivation(lifetimeMicros: Self.lifetime)
    let overflow = InotifyEvent(
      watch: -1, mask: UInt32(bitPattern: IN_Q_OVERFLOW), cookie: 0, name: nil)
    #expect(
      derive([(.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 9))], &derivation) == []
    )
    #expect(derive([], &derivation) == [.removed])
    #expect(
      derive([(.pending, Self.event(IN_MOVED_FROM, Self.pending(0), cookie: 5))], &derivation) == []
    )
    #expect(
      derive([(nil, overflow), (nil, overflow), (nil, overflow)], &derivation) == [.overflowed])
    // The overflow forgot the held half: its partner now looks like an arrival from outside.
    #expect(
      derive(
        [(.claimed, Self.event(IN_MOVED_TO, Self.claimed(1, lease: Self.now + 1), cookie: 5))],
        &derivation) == [])
    #expect(
      derive([(.pending, Self.event(IN_MOVED_TO, Self.pending(0), cookie: 5))], &derivation) == [
        .enqueued
      ])
  }
}
