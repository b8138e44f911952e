public import Foundation

/// One change in a mailbox's lifecycle, derived from a rename or unlink of a message's name (see
/// docs/WAKEUPS.md, "Lifecycle events", for exactly what is derived how and what cannot be told
/// apart). It carries the message's id and what its names carry, never its contents.
public struct AppGroupMailboxEvent: Sendable, Equatable, Hashable {
  /// What happened.
  public enum Kind: String, Sendable, Equatable, Hashable, CaseIterable {
    /// A message arrived in `pending/` from outside the areas (an enqueue's rename from `tmp/`).
    case enqueued
    /// A message arrived in `delayed/` from outside the areas (an enqueue with a not-before
    /// time); ``AppGroupMailboxEvent/dueAt`` is set.
    case delayed
    /// A delayed message became due and moved to `pending/`.
    case promoted
    /// A pending message was claimed; ``AppGroupMailboxEvent/deliveryCount`` counts this
    /// delivery.
    case claimed
    /// A claim's lease was renewed.
    case renewed
    /// A claim went back to `pending/` (or, with ``AppGroupMailboxEvent/dueAt``, to `delayed/`:
    /// a release with a retry delay) while its lease ran.
    case released
    /// A claim went back to `pending/` without counting the delivery (a message of another
    /// consumer's type, one that could not be read, or a claim released undelivered: see
    /// ``AppGroupMailboxClaimBase/releaseUndelivered()``), put back where it was.
    case putBack
    /// A claim whose lease had run out went back to `pending/` (recovery of an abandoned claim).
    case recovered
    /// A claim was deleted while its lease ran, or before its lifetime passed.
    case acknowledged
    /// A message was deleted after its lifetime passed.
    case expired
    /// A pending or delayed message was deleted before its lifetime passed (evicted by
    /// `discardOldest`, cancelled, deleted or moved away by hand).
    case removed
    /// A message moved to `quarantine/`; ``AppGroupMailboxEvent/quarantineReason`` says why.
    case quarantined
    /// A message moved to `quarantine/` as a dead letter (reason `deadletter`).
    case deadLettered
    /// A quarantined message was moved back to `pending/`.
    case requeued
    /// The kernel's event queue overflowed (`IN_Q_OVERFLOW`): events were lost, and nothing is
    /// known about what changed in between. Or the sequence's own buffer filled
    /// (``AppGroupMailboxInspector/events(bufferLimit:)``): the marker takes its last slot as
    /// soon as an event takes the one before, and events after it are dropped until the
    /// iteration takes some (when none came, none was lost). ``AppGroupMailboxEvent/id`` is nil.
    case overflowed
  }

  /// What happened.
  public var kind: Kind
  /// The message's id; nil for ``Kind/overflowed`` and for a quarantined entry whose name
  /// carries no id (`unknown`: a foreign file).
  public var id: UUID?
  /// When this process read the change from the kernel (the wall clock). It follows the change
  /// by the reader's latency, typically well under a millisecond on an idle machine.
  public var date: Date
  /// The delivery count its name carries after the change: 0 for a new message, the count of
  /// this delivery for ``Kind/claimed``; nil where the name carries none (quarantine,
  /// overflow).
  public var deliveryCount: Int?
  /// The quarantine reason from its quarantine name (`unsafe`, `malformed`, `oversized`,
  /// `future`, `deadletter`, `foreign`, `conflict`, `wrongtype`; docs/FORMAT.md, "Names"), for
  /// ``Kind/quarantined`` and ``Kind/deadLettered``; otherwise nil.
  public var quarantineReason: String?
  /// The due time of a message that moved to `delayed/` (``Kind/delayed``, and a
  /// ``Kind/released`` with a retry delay); otherwise nil. Microsecond precision.
  public var dueAt: Date?

  /// Creates an event (for tests and tools that produce events themselves).
  public init(
    kind: Kind, id: UUID?, date: Date, deliveryCount: Int? = nil, quarantineReason: String? = nil,
    dueAt: Date? = nil
  ) {
    self.kind = kind
    self.id = id
    self.date = date
    self.deliveryCount = deliveryCount
    self.quarantineReason = quarantineReason
    self.dueAt = dueAt
  }
}
