import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A marker planted in payloads; it must never show up in a diagnostic, error or log line.
let secretMarker = "SECRET-7f3a-DO-NOT-LOG"

/// The message type a `AppGroupMailbox<String>` stores and expects.
let stringType = String(describing: String.self)

extension TemporaryContainer {
  /// The path of `name` in `area` of namespace `jobs`.
  func path(_ area: String, _ name: String) -> String {
    self.area(area).appendingPathComponent(name).path
  }

  /// Writes `bytes` under `name` in `area` (created exclusively, mode 0600).
  func plant(_ area: String, _ name: String, _ bytes: [UInt8]) throws {
    let fd = open(path(area, name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw PlantError(what: "open \(name)", errno: errno) }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes {
        write(fd, $0.baseAddress! + offset, bytes.count - offset)
      }
      guard written > 0 else { throw PlantError(what: "write \(name)", errno: errno) }
      offset += written
    }
  }

  /// The names in quarantine of namespace `jobs`, parsed.
  func quarantined() -> [QuarantineName] {
    names("quarantine").compactMap(QuarantineName.init(parsing:))
  }

  /// Quarantine reasons, sorted.
  func quarantineReasons() -> [String] { quarantined().map(\.reason.rawValue).sorted() }
}

struct PlantError: Error, CustomStringConvertible {
  var what: String
  var errno: Int32
  var description: String { "\(what) failed: errno \(errno)" }
}

/// A pending name at `micros` with insertion sequence `sequence`.
func pendingName(micros: Int64, sequence: UInt64, id: UUID = UUID(), attempts: Int = 0) -> String {
  PendingName(key: MessageKey(micros: micros, sequence: sequence), id: id, attempts: attempts)
    .fileName
}

/// The bytes of a valid message file holding the JSON string `text`.
func envelope(id: UUID, micros: Int64, text: String, type: String = stringType, format: Int = 1)
  -> [UInt8]
{
  var header = Array(
    (try! Envelope.encode(id: id, enqueuedAt: micros, messageType: type, payload: Data())))
  if format != 1 {
    header = Array(
      String(decoding: header, as: UTF8.self).replacingOccurrences(
        of: "\"format\":1", with: "\"format\":\(format)"
      ).utf8)
  }
  return header + Array((try! JSONEncoder().encode(text)))
}

/// The clock microseconds of `clock`'s now.
func micros(_ clock: FakeClock) -> Int64 { Int64(clock.now.timeIntervalSince1970 * 1_000_000) }

/// Whether this process runs as root.
var isRoot: Bool { getuid() == 0 }

/// Whether the CI flag is set: set-ups that need root or a tmpfs must then fail, not skip.
var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

/// The condition of tests that mount a tmpfs: outside CI they need root (else a visible skip
/// with this reason); under CI they always run, and fail when the mount fails.
let mountsTmpfs = ConditionTrait.enabled(
  if: isRoot || isCI, "mounting a tmpfs needs root (under CI=true it must work)")

/// Mounts a tmpfs of `size` (mount(8) syntax, e.g. "1m") on `directory`; throws (a failed
/// requirement) when that is refused. Tests that call it carry ``mountsTmpfs``.
func mountTmpfs(_ directory: String, size: String) throws {
  let result = try Processes.run(
    "/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
  try #require(result.status == 0, "mount -t tmpfs failed: \(result.stderr)")
}

/// Mounts an overlay at `root`/merged whose lower layer, `root`/lower, stays on the test's
/// filesystem and whose upper layer is on a tmpfs: overlayfs then gives a regular file the
/// device of the layer it comes from, not the overlay's. The lower layer holds a mailbox
/// `jobs` made first. Returns the merged directory; `unmountOverlay(in:)` takes both mounts
/// down.
func mountTwoFilesystemOverlay(in root: String) throws -> String {
  _ = try AppGroupRawMailbox(containerURL: URL(fileURLWithPath: root + "/lower"), namespace: "jobs")
  let layers = root + "/layers"
  let merged = root + "/merged"
  for directory in [layers, merged] {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
  }
  try mountTmpfs(layers, size: "4m")
  for directory in ["upper", "work"] {
    try FileManager.default.createDirectory(
      atPath: layers + "/" + directory, withIntermediateDirectories: false)
  }
  let mounted = try Processes.run(
    "/bin/mount",
    [
      "-t", "overlay", "overlay", "-o",
      "lowerdir=\(root)/lower,upperdir=\(layers)/upper,workdir=\(layers)/work", merged,
    ])
  if mounted.status != 0 { unmount(layers) }
  try #require(mounted.status == 0, "mount -t overlay failed: \(mounted.stderr)")
  return merged
}

/// Takes down what ``mountTwoFilesystemOverlay(in:)`` mounted in `root`.
func unmountOverlay(in root: String) {
  unmount(root + "/merged")
  unmount(root + "/layers")
}

/// Unmounts what ``mountTmpfs(_:size:)`` mounted.
func unmount(_ directory: String) {
  _ = try? Processes.run("/bin/umount", ["-l", directory])
}

extension Processes {
  /// Runs any program to completion (a hang fails the test).
  static func run(_ path: String, _ arguments: [String], deadline: TimeInterval = 60) throws
    -> Finished
  {
    try start(URL(fileURLWithPath: path), arguments).finish(deadline: deadline)
  }
}

/// Reports any open, read, write, attribute change, move or deletion of watched paths (inotify(7)),
/// to prove a symlink's target was never read, moved or deleted.
///
/// Close events are not watched. The test wrote each target itself, and a process that another
/// test spawned at that moment holds a copy of that descriptor until its exec (fork(2) copies the
/// descriptor table; O_CLOEXEC closes it at execve(2)). The last close, and so IN_CLOSE_WRITE, can
/// then come after the watch started: CI saw exactly one such event under AddressSanitizer. Any
/// open by the library still shows as IN_OPEN, so leaving closes out hides nothing it could do.
final class AccessWatch {
  private let fd: Int32
  private static let names: [(UInt32, String)] = [
    (UInt32(IN_ACCESS), "IN_ACCESS"), (UInt32(IN_OPEN), "IN_OPEN"),
    (UInt32(IN_MODIFY), "IN_MODIFY"), (UInt32(IN_ATTRIB), "IN_ATTRIB"),
    (UInt32(IN_MOVE_SELF), "IN_MOVE_SELF"), (UInt32(IN_DELETE_SELF), "IN_DELETE_SELF"),
  ]

  init(_ paths: [String]) throws {
    fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { throw PlantError(what: "inotify_init1", errno: errno) }
    let mask = Self.names.reduce(UInt32(0)) { $0 | $1.0 }
    for path in paths where inotify_add_watch(fd, path, mask) < 0 {
      throw PlantError(what: "inotify_add_watch \(path)", errno: errno)
    }
  }

  deinit { close(fd) }

  /// The events since the watch started (or the last call), each as the names of its mask bits
  /// (or the mask in decimal, for IN_IGNORED and the like): empty when no path was touched.
  func events() -> [String] {
    var events: [String] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
      if got <= 0 { return events }
      var offset = 0
      while offset + 16 <= got {
        let (mask, length) = buffer.withUnsafeBytes {
          (
            $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
            $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
          )
        }
        let named = Self.names.filter { mask & $0.0 != 0 }.map(\.1)
        events.append(named.isEmpty ? "mask \(mask)" : named.joined(separator: "|"))
        offset += 16 + Int(length)
      }
    }
  }
}

/// The depth counter after a fresh recount would say the same (checks the counter is exact).
func depth<M>(_ mailbox: AppGroupMailbox<M>) throws -> Int {
  try mailbox.spool.withStateLock { $0.depth }
}

/// The depth the names on disk give (what a fresh process counts).
func recountedDepth<M>(_ mailbox: AppGroupMailbox<M>) throws -> Int {
  try mailbox.spool.withStateLock { try mailbox.spool.recount(stored: $0).depth }
}

/// Runs `body` on its own thread; returns false when it did not finish within `deadline`
/// seconds (a hang or a deadlock; the thread is then left behind and the test fails).
func finishes(within deadline: TimeInterval, _ body: @escaping @Sendable () -> Void) -> Bool {
  let done = DispatchSemaphore(value: 0)
  Thread {
    body()
    done.signal()
  }.start()
  return done.wait(timeout: .now() + deadline) == .success
}
