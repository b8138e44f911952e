import Foundation
import Glibc

extension Spool {
  /// Each message in `states` (of pending, claimed and delayed) once, as it was seen last, for
  /// the inspector's counts and listings while other processes claim and release.
  ///
  /// The areas are listed pending, claimed, delayed, then pending again (when claimed or
  /// delayed is asked for too): every single move (a claim, a release, a release with a delay,
  /// a promotion) goes to an area listed later, as in ``recount(stored:)``, so a message that
  /// moves once while it is listed is still seen, and one seen twice (claimed after it was
  /// listed pending) counts once, in the area it was seen in last. `describe` makes the value of
  /// an entry from its state, file name and lstat(2) description (nil: not a message name); an
  /// entry gone before it was looked at is left out.
  /// - Complexity: O(n) in the entries of the areas listed (pending twice), with a dictionary
  ///   entry per message.
  func sightings<Value>(
    _ states: Set<AppGroupMailboxEntry.State>,
    _ describe: (AppGroupMailboxEntry.State, String, stat) -> (UUID, Value)?
  ) throws -> [UUID: Value] {
    var seen: [UUID: Value] = [:]
    var areas: [(Int32, AppGroupMailboxEntry.State)] = []
    if states.contains(.pending) { areas.append((directories.pending, .pending)) }
    if states.contains(.claimed) { areas.append((directories.claimed, .claimed)) }
    if states.contains(.delayed) { areas.append((directories.delayed, .delayed)) }
    if states.contains(.pending), areas.count > 1 {
      areas.append((directories.pending, .pending))
    }
    for (area, state) in areas {
      // One name at a time: a listing at depth 100,000 holds no array of strings.
      try Syscall.forEachEntry(area) { bytes, _ in
        let name = String(decoding: bytes, as: UTF8.self)
        guard let info = try? Syscall.lstat(area, name),
          let (id, value) = describe(state, name, info)
        else { return }
        seen[id] = value
      }
    }
    return seen
  }
}
