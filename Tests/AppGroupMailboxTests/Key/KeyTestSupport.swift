import Foundation
import MailboxLocks

@testable import AppGroupMailbox

/// A pending message file as a keyed-enqueue test sees it: its name's id, its header and its
/// message.
struct PendingFile: Equatable {
  var name: PendingName
  var key: String?
  var id: String
  var message: String
}

extension TemporaryContainer {
  /// Every message file in `pending/`, read directly (header line, then the message).
  func pendingFiles() throws -> [PendingFile] {
    try names("pending").compactMap { fileName -> PendingFile? in
      guard let name = PendingName(parsing: fileName) else { return nil }
      let data = try Data(contentsOf: area("pending").appendingPathComponent(fileName))
      guard let newline = data.firstIndex(of: 0x0A),
        let header = try JSONSerialization.jsonObject(with: data[..<newline]) as? [String: Any]
      else { return nil }
      return PendingFile(
        name: name, key: header["key"] as? String, id: header["id"] as? String ?? "",
        message: String(decoding: data[(newline + 1)...], as: UTF8.self))
    }
  }

  /// The id `keys/<key>` names, or nil.
  func indexedID(_ key: String) -> String? {
    let url = url.appendingPathComponent("AppGroupMailbox/jobs/keys/\(key)")
    return (try? String(contentsOf: url, encoding: .utf8))?.trimmingCharacters(in: .newlines)
  }
}

/// Lists `pending/` over and over on a thread of its own until stopped, recording every count
/// it saw once the count first reached `settled`.
final class PendingObserver: Sendable {
  private let counts = Locked<[Int: Int]>([:])
  private let stopped = Locked(false)
  private let done = DispatchSemaphore(value: 0)

  init(_ container: TemporaryContainer, settled: Int) {
    let path = container.area("pending").path
    Thread.detachNewThread { [self] in
      var reached = false
      while !stopped.withLock({ $0 }) {
        let count = (try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1
        if count == settled { reached = true }
        if reached { counts.withLock { $0[count, default: 0] += 1 } }
      }
      done.signal()
    }
  }

  /// Stops listing; returns how many listings saw each count (after it first saw `settled`).
  func stop() -> [Int: Int] {
    stopped.withLock { $0 = true }
    done.wait()
    return counts.withLock { $0 }
  }
}
