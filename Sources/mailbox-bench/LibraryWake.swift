import AppGroupMailbox
import Foundation

/// The library side of the wake-up measure: a consumer process blocked in the library's
/// watcher (issue 4, branch `watcher`) and this process enqueueing.
///
/// Hook: when the watcher API is merged, `consume` waits on it instead of throwing, and `run`
/// returns the latencies. Until then `run` returns nil and the report marks the figure pending.
enum LibraryWake {
  /// Whether the library has a watcher to measure.
  static let available = false

  /// Runs one library round; nil while the watcher is not available.
  static func run(workspace: Workspace, samples: Int, gapMicroseconds: Int) throws -> [Double]? {
    guard available else { return nil }
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
  /// stamp it carries (ns), writes the latencies to `out`.
  static func consume(container: String, samples: Int, readyPath: String, out: String) throws {
    // Pending the watcher: open it, create `readyPath`, then loop
    //   wait (no timeout) -> claimPending() -> for each claim: latency = now - Int64(message)!,
    //   acknowledge -> until `samples` latencies; then Children.report(out, latencies).
    throw BenchError.setup("the library watcher is not available in this build")
  }
}
