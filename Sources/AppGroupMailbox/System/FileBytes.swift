import Foundation
import Glibc

/// The bytes of one file as the checked reader read them, in one malloc(3) allocation of their
/// own, so that a part of them (a message's payload) is handed out as `Data` without copying
/// (``data(_:)``): the allocation is freed when this value and the `Data` made from it are both
/// gone.
///
/// The bytes are written only by ``Syscall/readCapped(_:expected:limit:)`` and
/// ``Syscall/readPrefix(_:count:)``, before this value exists; afterwards it only reads them. The one `Data` of ``data(_:)`` may be written in
/// place by its owner (it is that `Data`'s own storage), which is why it is made once per range
/// and the reader never reads that range again after making it. Hence `@unchecked Sendable`:
/// the `Data`'s deallocator, which keeps this value alive, must be `@Sendable`.
final class FileBytes: @unchecked Sendable {
  private let base: UnsafeMutableRawPointer
  /// How many bytes were read.
  let count: Int
  /// The size of the allocation (at least ``count``; at most the read's limit plus one byte).
  let capacity: Int

  /// Takes over `base`, an allocation of `capacity` bytes from malloc(3) whose first `count`
  /// bytes were read; it is freed with free(3).
  init(adopting base: UnsafeMutableRawPointer, count: Int, capacity: Int) {
    self.base = base
    self.count = count
    self.capacity = capacity
  }

  /// An allocation of `capacity` bytes (at least 1) from malloc(3), uninitialized.
  /// - Throws: ``SystemCallError`` of `malloc` with `ENOMEM`.
  static func allocate(_ capacity: Int) throws -> UnsafeMutableRawPointer {
    guard let base = malloc(max(capacity, 1)) else {
      throw SystemCallError(call: "malloc", errno: .outOfMemory, role: .messageFile)
    }
    return base
  }

  deinit { free(base) }

  /// Calls `body` with the bytes read.
  func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E)
    -> R
  {
    try body(UnsafeRawBufferPointer(start: base, count: count))
  }

  /// A copy of the bytes read, for a reader that keeps them as an array (migration).
  var array: [UInt8] { withUnsafeBytes { Array($0) } }

  /// The bytes in `range` (within `0..<count`; clamped to it) as `Data` over this allocation:
  /// no copy. The `Data` keeps the allocation alive; it may be written in place by its owner,
  /// so make it once for a range and do not read that range here afterwards.
  /// - Complexity: O(1): two small allocations (the deallocator's context and the `Data`'s
  ///   storage); Foundation may copy a very small range (a few bytes) into the value itself.
  func data(_ range: Range<Int>) -> Data {
    let range = range.clamped(to: 0..<count)
    guard !range.isEmpty else { return Data() }
    return Data(
      bytesNoCopy: base + range.lowerBound, count: range.count,
      deallocator: .custom { _, _ in withExtendedLifetime(self) {} })
  }
}

extension Syscall {
  /// Reads a whole file from offset 0, but never more than `limit + 1` bytes, so a caller can
  /// tell "at most `limit`" from "larger" without reading a large or growing file whole.
  ///
  /// `expected` (the size fstat(2) reported) sizes the first allocation, `min(expected, limit)
  /// + 1` bytes; it grows (doubling, by realloc(3)) only while the file keeps delivering bytes,
  /// and never past `limit + 1`. Memory used is therefore O(min(actual size, limit)), whatever
  /// the file's size. A file of the size fstat(2) reported takes one pread(2): a read that
  /// returns exactly `expected` bytes, one short of the buffer, is at the end of the file (a
  /// regular file reads short only there). The bytes are never zero-filled first.
  /// - Throws: ``SystemCallError`` of pread(2), or of `malloc` with `ENOMEM`.
  static func readCapped(_ fd: Int32, expected: Int, limit: Int) throws -> FileBytes {
    let cap = limit + 1
    var capacity = min(max(expected, 0), limit) + 1
    var base = try FileBytes.allocate(capacity)
    var total = 0
    do {
      while total < cap {
        if total == capacity {  // the file grew since fstat(2): read on, never past the cap
          let grown = min(capacity * 2, cap)
          guard let moved = realloc(base, grown) else {
            throw SystemCallError(
              call: "realloc", errno: .outOfMemory, role: .messageFile)
          }
          base = moved
          capacity = grown
        }
        let into = base + total
        let room = capacity - total
        let got = try retrying("pread", at: fd) { Glibc.pread(fd, into, room, off_t(total)) }
        if got == 0 { break }
        total += got
        if total == expected, total < capacity { break }  // the size fstat(2) gave, read whole
      }
    } catch {
      free(base)
      throw error
    }
    return FileBytes(adopting: base, count: total, capacity: capacity)
  }

  /// Reads the first `count` bytes of a file (fewer at its end) from offset 0 into an
  /// allocation of their own: the header-only read (``Envelope/maxHeaderBytes`` at most).
  /// - Throws: ``SystemCallError`` of pread(2), or of `malloc` with `ENOMEM`.
  static func readPrefix(_ fd: Int32, count: Int) throws -> FileBytes {
    let capacity = max(count, 1)
    let base = try FileBytes.allocate(capacity)
    var total = 0
    do {
      while total < count {
        let into = base + total
        let room = count - total
        let got = try retrying("pread", at: fd) { Glibc.pread(fd, into, room, off_t(total)) }
        if got == 0 { break }
        total += got
      }
    } catch {
      free(base)
      throw error
    }
    return FileBytes(adopting: base, count: total, capacity: capacity)
  }
}
