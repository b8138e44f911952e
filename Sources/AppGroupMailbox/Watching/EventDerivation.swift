import Foundation
import Glibc

/// The areas whose names ``EventDerivation`` follows.
enum EventArea: Sendable, Hashable {
  case pending, claimed, delayed, quarantine
}

/// Turns inotify events on a namespace's four message areas into lifecycle events (see
/// docs/WAKEUPS.md, "Lifecycle events"). Pure: given the same events, times and lifetime it
/// gives the same answer, so it is tested without a file system.
///
/// A rename within the areas shows as `IN_MOVED_FROM` then `IN_MOVED_TO` with one cookie
/// (inotify(7)); the two are paired here, and the pair of names says what happened. A
/// `IN_MOVED_TO` without its other half came from outside the areas (`tmp/`), a `IN_MOVED_FROM`
/// whose other half does not arrive by the end of the next read left them. A keyed replacement
/// swaps a file from `tmp/` with a pending name (renameat2(2) `RENAME_EXCHANGE`), which shows in
/// `pending/` as an unpaired `IN_MOVED_TO` of the name at once followed by an unpaired
/// `IN_MOVED_FROM` of the same name: the arrival gives `enqueued`, and the departure, the old
/// file leaving for `tmp/`, gives nothing (the message stays pending under its name). Not
/// thread-safe: one reader thread feeds it.
struct EventDerivation {
  private struct HeldMove {
    var cookie: UInt32
    var area: EventArea
    var name: String
    var reads: Int
    /// The old half of an exchange (see above): it leaves no removal when it goes unpaired.
    var exchanged = false
  }

  /// The message lifetime in microseconds (from the mailbox's settings), to tell an expiry
  /// from a removal.
  var lifetimeMicros: Int64
  private var held: [HeldMove] = []

  init(lifetimeMicros: Int64) {
    self.lifetimeMicros = lifetimeMicros
  }

  /// The events of one read, in the kernel's order, each with its area (nil for
  /// `IN_Q_OVERFLOW`). `now` is the wall clock in microseconds since the epoch.
  mutating func derive(_ batch: [(EventArea?, InotifyEvent)], now: Int64) -> [AppGroupMailboxEvent]
  {
    var out: [AppGroupMailboxEvent] = []
    let date = Date(timeIntervalSince1970: Double(now) / 1_000_000)
    // The area and name of the event just before, when it was an unpaired `IN_MOVED_TO`.
    var lastArrival: (EventArea, String)?
    for (area, event) in batch {
      let arrivedBefore = lastArrival
      lastArrival = nil
      guard let area else {
        held.removeAll()
        if out.last?.kind != .overflowed {
          out.append(AppGroupMailboxEvent(kind: .overflowed, id: nil, date: date))
        }
        continue
      }
      guard let name = event.name else { continue }
      if event.has(IN_MOVED_FROM) {
        let exchanged = arrivedBefore.map { $0.0 == area && $0.1 == name } ?? false
        held.append(
          HeldMove(cookie: event.cookie, area: area, name: name, reads: 0, exchanged: exchanged))
      } else if event.has(IN_MOVED_TO) {
        if let index = held.firstIndex(where: { $0.cookie == event.cookie }) {
          let from = held.remove(at: index)
          out += move(from.area, from.name, area, name, now, date)
        } else {
          out += arrival(area, name, date)
          lastArrival = (area, name)
        }
      } else if event.has(IN_CREATE) {
        out += arrival(area, name, date)
      } else if event.has(IN_DELETE) {
        out += removal(area, name, now, date)
      }
    }
    // A half not paired within the next read left the areas.
    for move in held where move.reads >= 1 && !move.exchanged {
      out += removal(move.area, move.name, now, date)
    }
    held = held.filter { $0.reads < 1 }.map {
      HeldMove(cookie: $0.cookie, area: $0.area, name: $0.name, reads: 1, exchanged: $0.exchanged)
    }
    return out
  }

  private func arrival(_ area: EventArea, _ name: String, _ date: Date) -> [AppGroupMailboxEvent] {
    switch area {
    case .pending:
      guard let message = PendingName(parsing: name) else { return [] }
      return [event(.enqueued, message, date)]
    case .delayed:
      guard let delayed = DelayedName(parsing: name) else { return [] }
      return [event(.delayed, delayed.message, date, due: delayed.dueMicros)]
    case .quarantine:
      return quarantined(name, date)
    case .claimed:
      return []
    }
  }

  private func removal(_ area: EventArea, _ name: String, _ now: Int64, _ date: Date)
    -> [AppGroupMailboxEvent]
  {
    switch area {
    case .pending:
      guard let message = PendingName(parsing: name) else { return [] }
      return [event(expired(message, now) ? .expired : .removed, message, date)]
    case .delayed:
      guard let delayed = DelayedName(parsing: name) else { return [] }
      return [event(expired(delayed.message, now) ? .expired : .removed, delayed.message, date)]
    case .claimed:
      guard let claim = ClaimedName(parsing: name) else { return [] }
      let gone = leaseOver(claim, now) && expired(claim.message, now)
      return [event(gone ? .expired : .acknowledged, claim.message, date)]
    case .quarantine:
      return []
    }
  }

  private func move(
    _ from: EventArea, _ fromName: String, _ to: EventArea, _ toName: String, _ now: Int64,
    _ date: Date
  ) -> [AppGroupMailboxEvent] {
    switch (from, to) {
    case (.pending, .claimed):
      guard let claim = ClaimedName(parsing: toName) else { return [] }
      return [event(.claimed, claim.message, date)]
    case (.claimed, .claimed):
      guard let claim = ClaimedName(parsing: toName) else { return [] }
      return [event(.renewed, claim.message, date)]
    case (.claimed, .pending):
      guard let claim = ClaimedName(parsing: fromName), let message = PendingName(parsing: toName)
      else { return [] }
      if message.attempts < claim.message.attempts { return [event(.putBack, message, date)] }
      return [event(leaseOver(claim, now) ? .recovered : .released, message, date)]
    case (.claimed, .delayed):
      guard let delayed = DelayedName(parsing: toName) else { return [] }
      return [event(.released, delayed.message, date, due: delayed.dueMicros)]
    case (.delayed, .pending):
      guard let message = PendingName(parsing: toName) else { return [] }
      return [event(.promoted, message, date)]
    case (.quarantine, .pending):
      guard let message = PendingName(parsing: toName) else { return [] }
      return [event(.requeued, message, date)]
    case (_, .quarantine):
      return quarantined(toName, date)
    default:
      return removal(from, fromName, now, date) + arrival(to, toName, date)
    }
  }

  private func quarantined(_ name: String, _ date: Date) -> [AppGroupMailboxEvent] {
    guard let entry = QuarantineName(parsing: name) else { return [] }
    return [
      AppGroupMailboxEvent(
        kind: entry.reason == .deadletter ? .deadLettered : .quarantined, id: entry.id, date: date,
        quarantineReason: entry.reason.rawValue)
    ]
  }

  private func event(
    _ kind: AppGroupMailboxEvent.Kind, _ message: PendingName, _ date: Date, due: Int64? = nil
  ) -> AppGroupMailboxEvent {
    AppGroupMailboxEvent(
      kind: kind, id: message.id, date: date, deliveryCount: message.attempts,
      dueAt: due.map { Date(timeIntervalSince1970: Double($0) / 1_000_000) })
  }

  /// Whether the name's `enqueuedAt` plus the lifetime has passed.
  private func expired(_ message: PendingName, _ now: Int64) -> Bool {
    now - message.key.micros >= lifetimeMicros
  }

  /// Whether the claim's lease has run out, or lies further ahead than any process gives one
  /// (the recovery rule of docs/FORMAT.md).
  private func leaseOver(_ claim: ClaimedName, _ now: Int64) -> Bool {
    let horizon = AppGroupMailboxLimits.forgedLeaseHorizonMicros
    return claim.leaseUntilMicros < now || claim.leaseUntilMicros - now > horizon
  }
}
