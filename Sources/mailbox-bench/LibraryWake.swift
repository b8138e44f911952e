import AppGroupMailbox
import Foundation

/// The library side of the wake-up measure: a consumer process blocked in the library's
/// watcher (``AppGroupMailbox/wakeUps(pollingInterval:)``, then
/// ``AppGroupMailboxWatcher/wait(timeout:)``) and this process enqueueing.
enum LibraryWake {
  /// Runs one library round; returns the latencies in microseconds.
  static func run(workspace: Workspace, samples: Int, gapMicroseconds: Int) throws -> [Double] {
    let path = workspace.fresh("lib-wake")
    defer { workspace.remove(path) }
    let side = try LibrarySide(container: path, durability: .relaxed)
    let ready = path + "/ready"
    let out = path + "/latencies"
    let pid = try Children.spawn(["_wake-lib", path, String(samples), ready, out])
    let deadline = nowNanoseconds() + 30_000_000_000
    while !FileManager.default.fileExists(atPath: ready) {
      guard nowNanoseconds() < deadline else { throw BenchError.failed("library wake consumer") }
      usleep(1_000)
    }
    for _ in 0..<samples {
      usleep(useconds_t(gapMicroseconds))
      try side.mailbox.enqueue(String(nowNanoseconds()))
    }
    guard try Children.wait(pid).status == 0 else {
      throw BenchError.failed("library wake consumer")
    }
    return try Children.result(out).compactMap { Double($0).map { $0 / 1e3 } }
  }

  /// The consumer process: waits with the watcher, claims each message, records now minus the
  /// stamp it carries (ns), writes the latencies to `out`. Stops after `samples` messages; a
  /// message whose stamp cannot be parsed is dropped (as the C consumer drops it), not counted
  /// as a latency of 0.
  static func consume(container: String, samples: Int, readyPath: String, out: String) throws {
    let side = try LibrarySide(container: container, durability: .relaxed)
    let watcher = try side.mailbox.wakeUps()
    defer { watcher.close() }
    _ = FileManager.default.createFile(atPath: readyPath, contents: nil)
    var latencies: [Int64] = []
    var seen = 0
    while seen < samples {
      _ = try watcher.wait(timeout: nil)
      while true {
        let claims = try side.mailbox.claimPending(limit: 16)
        if claims.isEmpty { break }
        let now = nowNanoseconds()  // holding the messages
        for claim in claims {
          seen += 1
          if let stamp = Int64(claim.message) { latencies.append(now - stamp) }
          try claim.acknowledge()
        }
      }
    }
    try Children.report(out, latencies.prefix(samples).map(String.init))
  }
}
