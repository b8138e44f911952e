/// The areas of a namespace directory, each a directory of message files (docs/FORMAT.md,
/// "Layout"). The one place their names are spelled: opening, watching, checking and error
/// texts all take them from here.
enum SpoolArea: String, CaseIterable, Sendable {
  /// Files being written; renamed out when complete.
  case tmp
  /// Messages waiting to be claimed.
  case pending
  /// Messages a consumer holds, under a lease.
  case claimed
  /// Entries set aside as unreadable, unsafe or undeliverable.
  case quarantine
  /// Messages not due yet.
  case delayed

  /// The area's entry name in the namespace directory.
  var name: String { rawValue }

  /// The area's name as bytes, for comparing with names inotify(7) reports.
  var nameBytes: [UInt8] { Array(rawValue.utf8) }

  /// What the area's descriptor is to the mailbox, for error texts.
  var role: PathRole {
    switch self {
    case .tmp: .tmpArea
    case .pending: .pendingArea
    case .claimed: .claimedArea
    case .quarantine: .quarantineArea
    case .delayed: .delayedArea
    }
  }
}
