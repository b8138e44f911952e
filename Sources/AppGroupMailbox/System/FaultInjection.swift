import Glibc
import Synchronization

/// A test-only hook in the system-call layer: makes the n-th later call of a named system call
/// fail with a chosen errno, so tests provoke ENOSPC, EIO, EMFILE or EXDEV without a broken disk.
///
/// Only compiled into debug builds (what `swift test` builds); release builds never consult it.
enum FaultInjection {
  struct Rule: Sendable {
    var call: String
    var errno: Int32
    /// Calls of `call` to let through before failing.
    var skip: Int
    /// How many calls fail once `skip` is used up (`Int.max` = every later call).
    var count: Int
  }

  #if DEBUG
    private static let rules = Mutex<[Rule]>([])

    /// Adds a rule; see ``Rule``.
    static func add(_ rule: Rule) { rules.withLock { $0.append(rule) } }

    /// Removes every rule.
    static func reset() { rules.withLock { $0.removeAll() } }

    /// The errno to fail `call` with now, if a rule says so.
    static func check(_ call: String) -> Int32? {
      rules.withLock { rules in
        guard let index = rules.firstIndex(where: { $0.call == call }) else { return nil }
        if rules[index].skip > 0 {
          rules[index].skip -= 1
          return nil
        }
        let errno = rules[index].errno
        rules[index].count -= 1
        if rules[index].count <= 0 { rules.remove(at: index) }
        return errno
      }
    }
  #else
    @inline(__always) static func check(_ call: String) -> Int32? { nil }
  #endif
}
