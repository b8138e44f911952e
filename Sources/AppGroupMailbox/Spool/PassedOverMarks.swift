import Foundation
import Glibc

/// The messages a typed consumer read and put back because they are another consumer's type or
/// a payload version it does not read (``Spool/ReadFailure/otherType(_:)``), by id, each with
/// the ``FileIdentity`` of the file it read, so its claims pass them over without renaming them
/// again. Kept in the ``PendingIndex`` that reports every name arriving in `pending/`.
///
/// A mark is *confirmed* when a claim may pass the message over without looking at it. It
/// starts unconfirmed, and it becomes unconfirmed again whenever a name with its id arrives
/// (an inotify event: the put-back itself, a release or recovery by another consumer, a keyed
/// replacement swapped into the name) and whenever the index cannot account for arrivals (a
/// listing: after an overflow, or on every claim where inotify is unavailable). An unconfirmed
/// mark costs the next claim one lstat(2) of the name: the same file (same ``FileIdentity``)
/// confirms it, another file drops it, and the claim reads that file as any other. So a
/// replacement is never passed over, and consumers of different types passing over the same
/// message do not wake each other into reading it again (a put-back keeps the file).
struct PassedOverMarks {
  /// One passed-over message.
  struct Mark: Sendable {
    /// The file the consumer read.
    var file: FileIdentity
    /// Arrivals of its id counted so far; a look confirms the mark only if none came since the
    /// mark was handed out.
    var arrivals: UInt32 = 0
    /// Whether a claim may pass the message over without looking at its name.
    var confirmed = false
  }

  /// Most marks kept; past it they start again empty (each forgotten message then costs two
  /// renames and a read once more). 65,536 marks take about 6 MiB.
  static let memory = 65_536

  private var marks: [UUID: Mark] = [:]

  /// Whether no message is marked (then nothing is looked up per name).
  var isEmpty: Bool { marks.isEmpty }

  /// The mark of message `id`, or nil. - Complexity: O(1).
  subscript(id: UUID) -> Mark? { marks[id] }

  /// Records that the file `file` of message `id` was put back, unconfirmed.
  mutating func mark(_ id: UUID, file: FileIdentity) {
    if marks.count >= Self.memory, marks[id] == nil { marks.removeAll() }
    marks[id] = Mark(file: file, arrivals: (marks[id]?.arrivals ?? 0) &+ 1)
  }

  /// A name with `id` arrived in `pending/`. - Complexity: O(1).
  mutating func arrived(_ id: UUID) {
    guard let index = marks.index(forKey: id) else { return }
    marks.values[index].arrivals &+= 1
    marks.values[index].confirmed = false
  }

  /// Arrivals went unseen (a listing): every mark needs a look. - Complexity: O(k).
  mutating func unconfirmAll() {
    var index = marks.startIndex
    while index != marks.endIndex {
      marks.values[index].confirmed = false
      marks.formIndex(after: &index)
    }
  }

  /// A look found `mark`'s file still under the name: confirms it unless a name with its id
  /// arrived since `mark` was handed out.
  mutating func confirm(_ id: UUID, _ mark: Mark) {
    guard let index = marks.index(forKey: id), marks.values[index].arrivals == mark.arrivals,
      marks.values[index].file == mark.file
    else { return }
    marks.values[index].confirmed = true
  }

  /// Drops the mark of `id` (its next claim reads it).
  mutating func remove(_ id: UUID) { marks[id] = nil }

  /// Drops every mark (the next claims read every message again).
  mutating func removeAll() { marks.removeAll() }

  /// The unconfirmed marks. - Complexity: O(k).
  var unconfirmed: [UUID: Mark] { marks.filter { !$0.value.confirmed } }
}
