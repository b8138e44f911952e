import Foundation

/// What a migration knows of the ids this mailbox holds: the files of each id in `pending/`,
/// `claimed/`, `delayed/` and `quarantine/` from one listing of each area made when the
/// migration starts, plus the payload of each message the migration itself wrote since.
///
/// Every duplicate check of a migration reads this instead of listing the areas again, so a
/// migration of n old messages lists each area once instead of once or more per message
/// (which made it quadratic: 5,000 old messages took 78 s). The listing is current for the
/// whole run because no process of this format changes the namespace while old files are in it
/// (they refuse to open it, "run mailboxctl migrate"); a message of this format that appeared
/// during the run anyway is written again under its id, which at-least-once delivery allows.
struct MigrationPresence {
  /// The files with each id: the area's descriptor and the exact name.
  private var files: [UUID: [(area: Int32, name: EntryName)]] = [:]
  /// The payloads and enqueue dates (microseconds) this run wrote, by id (all with the run's
  /// type tag).
  private var written: [UUID: (payload: Data, micros: Int64?)] = [:]

  /// Lists the four areas of `spool` once.
  /// - Throws: ``SystemCallError`` when an area cannot be listed.
  /// - Complexity: O(n) in the entries of those areas.
  init(_ spool: Spool) throws {
    var files: [UUID: [(area: Int32, name: EntryName)]] = [:]
    _ = try spool.firstMessageFile { area, entry, id in
      files[id, default: []].append((area, entry.exactName))
      return false
    }
    self.files = files
  }

  /// Whether the mailbox holds a message with `id`. - Complexity: O(1).
  func contains(_ id: UUID) -> Bool { written[id] != nil || files[id] != nil }

  /// Records that this run wrote `message`.
  mutating func wrote(_ message: LegacyMessage) {
    written[message.id] = (message.payload, message.micros)
  }

  /// Whether the mailbox holds `message` itself, as an import writes it: written by this run,
  /// or a file of the mailbox outside `quarantine/` (read with the checked reader a claim uses)
  /// with the same payload, type tag `messageType` and enqueue date. A copy in quarantine (not
  /// deliverable) or with another date (not what an import wrote: an expired one would vanish
  /// at the next claim) is not the message, so its old file is kept in quarantine instead of
  /// deleted.
  /// - Complexity: one read per file with that id.
  func holdsSame(_ message: LegacyMessage, messageType: String, in spool: Spool) throws -> Bool {
    if let wrote = written[message.id] {
      return wrote.payload == message.payload && wrote.micros == message.micros
    }
    let payload = Array(message.payload)
    for (area, name) in files[message.id] ?? [] where area != spool.directories.quarantine {
      let read = try mapIO("migrate") { try spool.readEntry(area, name) }
      guard case .success(let (_, file)) = read else { continue }
      let bytes = file.array
      guard let (header, range) = try? Envelope.decode(bytes) else { continue }
      if header.messageType == messageType, header.enqueuedAt == message.micros,
        bytes[range].elementsEqual(payload)
      {
        return true
      }
    }
    return false
  }
}
