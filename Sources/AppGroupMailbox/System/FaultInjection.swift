import Glibc
import MailboxLocks

/// A test-only hook in the system-call layer: makes the n-th later call of a named system call
/// fail with a chosen errno, or run an action first, so tests provoke ENOSPC, EIO, EMFILE or EXDEV
/// (or a file that grows while it is read) without a broken disk.
///
/// Rules live either in a process-wide list (``add(_:)``) or in a list scoped to the current task
/// (``withRules(_:_:)``); scoped rules only affect system calls made by that task, so tests that
/// run in parallel in one process do not trip each other's faults. Only compiled into debug builds
/// (what `swift test` builds); release builds never consult it.
enum FaultInjection {
  struct Rule: Sendable {
    var call: String
    /// The errno to fail with; 0 lets the call run (after ``action``).
    var errno: Int32
    /// Calls of `call` to let through before the rule fires.
    var skip: Int
    /// How many calls the rule fires for once `skip` is used up (`Int.max` = every later call).
    var count: Int
    /// Runs (on the calling thread) each time the rule fires, before the call fails or runs.
    var action: (@Sendable () -> Void)?
    /// When set, only calls made on (or in) a descriptor of this role count: the open of
    /// `settings` (in the namespace directory) and not a listing of an area.
    var role: PathRole?

    init(
      call: String, errno: Int32, skip: Int = 0, count: Int = 1, role: PathRole? = nil,
      action: (@Sendable () -> Void)? = nil
    ) {
      self.role = role
      self.call = call
      self.errno = errno
      self.skip = skip
      self.count = count
      self.action = action
    }
  }

  #if DEBUG
    /// A list of rules with its own lock.
    final class Rules: Sendable {
      let list: Locked<[Rule]>
      init(_ rules: [Rule]) { list = Locked(rules) }

      /// The rule that fires for `call` now, consuming one use of it.
      func fire(_ call: String, role: PathRole?) -> Rule? {
        list.withLock { rules in
          guard
            let index = rules.firstIndex(where: {
              $0.call == call && ($0.role == nil || $0.role == role)
            })
          else { return nil }
          if rules[index].skip > 0 {
            rules[index].skip -= 1
            return nil
          }
          let rule = rules[index]
          rules[index].count -= 1
          if rules[index].count <= 0 { rules.remove(at: index) }
          return rule
        }
      }

      /// Rules not fired yet.
      var remaining: [Rule] { list.withLock { $0 } }
    }

    private static let global = Rules([])
    @TaskLocal private static var scoped: Rules?

    /// Adds a process-wide rule; see ``Rule``.
    static func add(_ rule: Rule) { global.list.withLock { $0.append(rule) } }

    /// Adds a rule to the rules of the current task's ``withRules(_:_:)`` (nothing outside one):
    /// from a rule's action, a fault that starts at a chosen call and lasts.
    static func addToScope(_ rule: Rule) { scoped?.list.withLock { $0.append(rule) } }

    /// Removes every process-wide rule.
    static func reset() { global.list.withLock { $0.removeAll() } }

    /// Runs `body` with `rules` applying to the system calls this task makes (and only those);
    /// returns what `body` returns and the rules that never fired.
    static func withRules<T>(_ rules: [Rule], _ body: () throws -> T) rethrows -> (T, [Rule]) {
      let scope = Rules(rules)
      let result = try $scoped.withValue(scope) { try body() }
      return (result, scope.remaining)
    }

    /// The errno to fail `call` with now, if a rule says so (after running its action).
    static func check(_ call: String, role: PathRole? = nil) -> Int32? {
      guard let rule = scoped?.fire(call, role: role) ?? global.fire(call, role: role) else {
        return nil
      }
      rule.action?()
      return rule.errno == 0 ? nil : rule.errno
    }
  #else
    @inline(__always) static func check(_ call: String, role: PathRole? = nil) -> Int32? { nil }
  #endif
}
