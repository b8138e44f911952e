import Foundation

/// A pending name as the index keeps it: 40 bytes (a ``PendingName`` takes 48), compared
/// as integers in claim order: the level (higher first), `enqueuedAt`, the sequence, then the
/// id's bytes (the order of `uuidString`, so equal keys pop in a stable order).
struct PackedName {
  /// The time of its place in line, microseconds since 1970 (``MessageKey/micros``).
  var micros: Int64
  /// The namespace's enqueue counter (``MessageKey/sequence``).
  var sequence: UInt64
  /// The id's first 8 bytes, big-endian, so integer order is `uuidString` order.
  var idHigh: UInt64
  /// The id's last 8 bytes, big-endian.
  var idLow: UInt64
  /// Deliveries so far (``PendingName/attempts``).
  var attempts: UInt32
  /// The priority level, 0 to 9 (``MessageKey/level``). Declared last: 40 bytes in all.
  var level: Int8

  init(_ name: PendingName) {
    micros = name.key.micros
    sequence = name.key.sequence
    (idHigh, idLow) = withUnsafeBytes(of: name.id.uuid) { raw in
      (
        UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
        UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
      )
    }
    attempts = UInt32(clamping: name.attempts)
    level = Int8(clamping: name.key.level)
  }

  var name: PendingName {
    PendingName(
      key: MessageKey(micros: micros, sequence: sequence, level: Int(level)),
      id: UUID(uuid: unsafeBitCast((idHigh.bigEndian, idLow.bigEndian), to: uuid_t.self)),
      attempts: Int(attempts))
  }

  /// A message's identity: its key and id, without the attempts (the fields as
  /// ``PackedName``'s).
  struct Message: Hashable {
    var micros: Int64
    var sequence: UInt64
    var idHigh: UInt64
    var idLow: UInt64
    var level: Int8
  }

  var message: Message {
    Message(micros: micros, sequence: sequence, idHigh: idHigh, idLow: idLow, level: level)
  }

  /// The same key and id (the attempts may differ).
  func sameMessage(as other: Self) -> Bool {
    level == other.level && micros == other.micros && sequence == other.sequence
      && idHigh == other.idHigh && idLow == other.idLow
  }

  @inline(__always)
  static func < (lhs: Self, rhs: Self) -> Bool {
    if lhs.level != rhs.level { return lhs.level > rhs.level }
    if lhs.micros != rhs.micros { return lhs.micros < rhs.micros }
    if lhs.sequence != rhs.sequence { return lhs.sequence < rhs.sequence }
    if lhs.idHigh != rhs.idHigh { return lhs.idHigh < rhs.idHigh }
    return lhs.idLow < rhs.idLow
  }
}

/// A binary min-heap of pending names in claim order (then id, for a stable order), stored in
/// chunks of 2,048 ``PackedName``s (80 KiB): growing never copies what is stored, so the peak
/// memory of an index of n names is about 40 n bytes (an array doubling its storage holds both
/// copies for a moment), and chunks emptied by claims are given back.
struct NameHeap: ~Copyable {
  private static let chunkShift = 11
  private static let chunkSize = 1 << chunkShift
  private var chunks: [UnsafeMutablePointer<PackedName>] = []
  private(set) var count = 0

  init() {}

  /// A heap of `names`. - Complexity: O(n).
  init(_ names: [PendingName]) {
    for name in names { append(name) }
    heapify()
  }

  deinit {
    for chunk in chunks { chunk.deallocate() }
  }

  @inline(__always)
  private func slot(_ index: Int) -> UnsafeMutablePointer<PackedName> {
    chunks[index >> Self.chunkShift] + (index & (Self.chunkSize - 1))
  }

  /// Adds a name at the end without restoring the heap order: call ``heapify()`` after the
  /// last one. - Complexity: O(1).
  mutating func append(_ name: PendingName) {
    if count == chunks.count << Self.chunkShift {
      chunks.append(.allocate(capacity: Self.chunkSize))
    }
    slot(count).initialize(to: PackedName(name))
    count += 1
  }

  /// Restores the heap order over everything appended (Floyd's method). - Complexity: O(n).
  mutating func heapify() {
    var parent = count / 2 - 1
    while parent >= 0 {
      siftDown(parent)
      parent -= 1
    }
  }

  /// Removes every name and gives the memory back.
  mutating func removeAll() {
    for chunk in chunks { chunk.deallocate() }
    chunks = []
    count = 0
  }

  /// Adds a name. - Complexity: O(log n).
  mutating func push(_ name: PendingName) {
    append(name)
    var child = count - 1
    let item = slot(child).pointee
    while child > 0 {
      let parent = (child - 1) / 2
      let above = slot(parent).pointee
      guard item < above else { break }
      slot(child).pointee = above
      child = parent
    }
    slot(child).pointee = item
  }

  /// Removes and returns the smallest name. - Complexity: O(log n).
  mutating func pop() -> PendingName? {
    guard count > 0 else { return nil }
    let smallest = slot(0).pointee
    count -= 1
    if count > 0 {
      slot(0).pointee = slot(count).pointee
      siftDown(0)
    }
    // Keep one spare chunk beyond the one in use, so a claim and an enqueue at a chunk's edge
    // do not allocate and free every time.
    if chunks.count > (count >> Self.chunkShift) + 2 {
      chunks.removeLast().deallocate()
    }
    return smallest.name
  }

  private func siftDown(_ start: Int, end: Int? = nil) {
    let end = end ?? count
    var parent = start
    let item = slot(parent).pointee
    while true {
      let left = 2 * parent + 1
      guard left < end else { break }
      var child = left
      var candidate = slot(left).pointee
      if left + 1 < end {
        let right = slot(left + 1).pointee
        if right < candidate {
          child = left + 1
          candidate = right
        }
      }
      guard candidate < item else { break }
      slot(parent).pointee = candidate
      parent = child
    }
    slot(parent).pointee = item
  }

  // Counting distinct messages (``Spool/recount(stored:)``): the names sorted in place, then
  // looked up by binary search, in 40 bytes a name instead of a hash set's hundred.

  /// Sorts the names in place, last in claim order first (heapsort: no memory beyond the
  /// names), after which ``contains(_:)`` and ``distinctCount`` apply; ``pop()`` and
  /// ``push(_:)`` do not until ``heapify()``. - Complexity: O(n log n).
  mutating func sortDescending() {
    heapify()
    var end = count - 1
    while end > 0 {
      let smallest = slot(0).pointee
      slot(0).pointee = slot(end).pointee
      slot(end).pointee = smallest
      siftDown(0, end: end)
      end -= 1
    }
  }

  /// Whether a name with `name`'s key and id is among the names (attempts aside); only after
  /// ``sortDescending()``. - Complexity: O(log n).
  func contains(_ name: PendingName) -> Bool {
    let wanted = PackedName(name)
    var low = 0
    var high = count
    while low < high {
      let middle = (low + high) / 2
      let item = slot(middle).pointee
      if item.sameMessage(as: wanted) { return true }
      if wanted < item { low = middle + 1 } else { high = middle }
    }
    return false
  }

  /// The number of different (key, id) pairs among the names; only after
  /// ``sortDescending()``. - Complexity: O(n).
  var distinctCount: Int {
    var distinct = 0
    var index = 0
    while index < count {
      if index == 0 || !slot(index).pointee.sameMessage(as: slot(index - 1).pointee) {
        distinct += 1
      }
      index += 1
    }
    return distinct
  }
}
