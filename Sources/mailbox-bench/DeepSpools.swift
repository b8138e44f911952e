import AppGroupMailbox
import Foundation
import Glibc

/// Deep spools for the depth measures, prefilled once in relaxed mode and kept between runs of
/// the benchmark in a cache directory (default `/var/tmp/mailbox-bench-cache`; `--cache`).
///
/// Filling 100,000 messages takes tens of seconds, and deleting them far longer on a filesystem
/// that discards on unlink, so the spools are reused: every depth round leaves its spool as deep
/// as it found it. A spool found with claimed or temporary leftovers (an interrupted run) is
/// rebuilt; one that is short is topped up.
enum DeepSpools {
  static let version = "v1"

  /// The baseline and library spool paths for `depth`, ready.
  static func prepare(depth: Int, size: Int, cache: String) throws -> (c: String, lib: String) {
    try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
    let cPath = "\(cache)/\(version)-c-\(depth)"
    let libPath = "\(cache)/\(version)-lib-\(depth)"
    let libArea = "\(libPath)/AppGroupMailbox/\(LibrarySide.namespace)"
    if let have = count(cPath, leftovers: ["claimed", "tmp"]), have <= depth {
      try BaselineSide(root: cPath, durable: false).prefill(
        count: depth - have, size: size, durable: false)
    } else {
      try? FileManager.default.removeItem(atPath: cPath)
      try BaselineSide(root: cPath, durable: false).prefill(
        count: depth, size: size, durable: false)
    }
    if let have = count(libArea, leftovers: ["claimed", "tmp", "quarantine"]), have <= depth {
      _ = try LibrarySide(container: libPath, durability: .relaxed).timeEnqueue(
        count: depth - have, size: size)
    } else {
      try? FileManager.default.removeItem(atPath: libPath)
      _ = try LibrarySide(container: libPath, durability: .relaxed).timeEnqueue(
        count: depth, size: size)
    }
    // Put both on disk alike: an unlink of a file that reached the disk waits for a discard,
    // and the side filled first would otherwise be the only one written back.
    sync()
    return (cPath, libPath)
  }

  /// Messages in `<area>/pending`, or nil when it is missing or any of `leftovers` is not
  /// empty.
  private static func count(_ area: String, leftovers: [String]) -> Int? {
    let files = FileManager.default
    for name in leftovers {
      if let entries = try? files.contentsOfDirectory(atPath: "\(area)/\(name)"), !entries.isEmpty {
        return nil
      }
    }
    guard let pending = try? files.contentsOfDirectory(atPath: "\(area)/pending") else {
      return nil
    }
    return pending.filter { $0.hasSuffix(".msg") }.count
  }
}
