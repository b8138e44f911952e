import AppGroupMailbox
import Foundation
import Glibc
import MailboxLocks

/// A program started with posix_spawn(3) as the leader of its own process group, watched by a
/// thread blocked in waitid(2) with `WNOWAIT` for exactly this process.
///
/// Its exit is noticed when the process itself exits, whatever it left behind: a background
/// process that keeps an inherited descriptor open delays nothing (Foundation's `Process` on
/// Linux learns of the exit from a socket the child inherits, so a descendant holding it delays
/// the news). The exited leader stays a zombie until ``reap()`` (or deinit), so its pid, which is
/// the group's id, cannot be reused before then (wait(2): a zombie keeps its process ID; Linux
/// also keeps an id in use while a group of that id has members): signals sent by
/// ``signalGroup(_:)`` reach the whole group (kill(2) with `-pgid`), also the members a leader
/// that exited left behind.
/// The child gets descriptors 0, 1 and 2 only (see ``inheritedDescriptorsClosed``), and starts with an empty signal mask and the default action for SIGPIPE, SIGINT,
/// SIGTERM and SIGHUP (posix_spawnattr_setsigdefault(3)).
final class ChildProcess: Sendable {
  let pid: pid_t
  /// The wait status once exited (in waitpid(2)'s encoding), else nil.
  private let status = Locked<Int32?>(nil)
  /// Whether ``reap()`` collected the zombie (then its pid may be reused).
  private let reaped = Locked(false)
  /// When ``stop(grace:now:)`` first sent SIGTERM, and whether it sent SIGKILL.
  private let stopping = Locked<(terminateSentAt: Date?, killSent: Bool)>((nil, false))

  /// Starts `executable` with `arguments` (not counting argv[0], which is the executable's
  /// path) and `environment`; `stdin` and `stdout`, when given, become the child's descriptors
  /// 0 and 1 (the caller closes its copies); stderr is inherited. `exited` runs on the watching
  /// thread once the process has exited (it is reaped by ``reap()`` or deinit).
  /// - Throws: ``CommandFailure`` (``ExitStatus/osError``) with posix_spawn's errno.
  init(
    executable: String, arguments: [String], environment: [String: String],
    stdin: Int32?, stdout: Int32?, exited: @escaping @Sendable () -> Void
  ) throws(CommandFailure) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let stdin { posix_spawn_file_actions_adddup2(&actions, stdin, 0) }
    if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
    Self.inheritedDescriptorsClosed
    Self.childExitsKept
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setpgroup(&attributes, 0)
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    var child: pid_t = 0
    let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
    guard result == 0 else {
      let hint = ExecLookup.startHint(executable, error: result)
      throw CommandFailure(
        .osError,
        "cannot start \(executable): \(Errno(rawValue: result).explanation)" + hint)
    }
    pid = child
    let status = self.status
    let spawned = child
    do {
      try PosixThread.start(joinable: false, to: "watch \(executable)") {
        Self.watch(spawned, status: status, exited: exited)
      }
    } catch {
      // Nothing would learn of its exit: stop it now rather than run it unwatched.
      kill(-child, SIGKILL)
      var value: Int32 = 0
      while waitpid(child, &value, 0) < 0, Errno.current == .interrupted {}
      reaped.withLock { $0 = true }
      throw error
    }
  }

  /// Waits (waitid(2) with `WNOWAIT`, leaving the zombie for ``reap()``) until `pid` exits,
  /// records its status in `status`, then calls `exited`.
  private static func watch(
    _ spawned: pid_t, status: Locked<Int32?>, exited: @Sendable () -> Void
  ) {
    var info = siginfo_t()
    var value: Int32 = 0
    while true {
      if waitid(P_PID, id_t(spawned), &info, WEXITED | WNOWAIT) == 0 {
        // As waitpid(2) encodes it: exit status in bits 8-15, else the signal (bit 7: core).
        let code = info._sifields._sigchld.si_status
        switch info.si_code {
        case Int32(CLD_EXITED): value = (code & 0xff) << 8
        case Int32(CLD_DUMPED): value = (code & 0x7f) | 0x80
        default: value = code & 0x7f
        }
        break
      }
      guard Errno.current == .interrupted else {
        // ECHILD: someone else collected it; its status is unknown, never a success.
        value = Self.unknownStatus
        break
      }
    }
    status.withLock { $0 = value }
    exited()
  }

  /// Whether the process has exited (it may not be reaped yet).
  var hasExited: Bool { status.withLock { $0 } != nil }

  /// Collects the exited process (waitpid(2)), once; after that its pid, the group's id, may be
  /// reused, so ``signalGroup(_:)`` sends nothing. Does nothing while it runs.
  func reap() {
    guard hasExited else { return }
    let pid = self.pid
    reaped.withLock { done in
      guard !done else { return }
      done = true
      var value: Int32 = 0
      while waitpid(pid, &value, 0) < 0, Errno.current == .interrupted {}
    }
  }

  deinit { reap() }

  /// The status recorded when waitid(2) could not tell how the process ended (ECHILD):
  /// counted as a failure.
  private static let unknownStatus: Int32 = -1

  /// True when it exited with status 0 (false while running, or when its status is unknown).
  var succeeded: Bool {
    guard let value = status.withLock({ $0 }), value != Self.unknownStatus else { return false }
    return value & 0x7f == 0 && (value >> 8) & 0xff == 0
  }

  /// How it ended, for diagnostics: `exit status N`, `killed by signal N`, or that its status
  /// is unknown.
  var outcome: String {
    guard let value = status.withLock({ $0 }) else { return "running" }
    if value == Self.unknownStatus { return "exit status unknown (waitid failed)" }
    if value & 0x7f == 0 { return "exit status \((value >> 8) & 0xff)" }
    return "killed by signal \(value & 0x7f)"
  }

  /// Sends `number` to the whole process group until the leader is reaped (after that its id
  /// may be reused): also after the leader exited, to what it left in the group.
  func signalGroup(_ number: Int32) {
    reaped.withLock { done in
      if !done { kill(-pid, number) }
    }
  }

  /// Sets SIGCHLD back to its default action, once, before the first program starts. A parent
  /// may start mailboxctl with SIGCHLD ignored (the disposition survives execve(2)), and then the
  /// kernel reaps exited children at once (sigaction(2), SA_NOCLDWAIT; wait(2), NOTES): waitid
  /// would wait for every child, then fail with ECHILD, and no handler's exit status would be
  /// known.
  private static let childExitsKept: Void = {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = SIG_DFL
    sigemptyset(&action.sa_mask)
    sigaction(SIGCHLD, &action, nil)
  }()

  /// Marks every descriptor above 2 that mailboxctl inherited close-on-exec (listed from
  /// /proc/self/fd), once: a descriptor a parent gave mailboxctl, such as the socket by which
  /// Foundation's `Process` learns that mailboxctl exited, must not reach handlers (their
  /// background processes would hold it and keep that parent waiting). mailboxctl's own
  /// descriptors are opened close-on-exec.
  private static let inheritedDescriptorsClosed: Void = {
    let own = opendir("/proc/self/fd")
    guard let own else { return }
    defer { closedir(own) }
    let skip = dirfd(own)
    while let entry = readdir(own) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard let fd = Int32(name), fd > 2, fd != skip else { continue }
      let flags = fcntl(fd, F_GETFD)
      if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }
  }()

  /// Stops the process group: SIGTERM once, then SIGKILL once `grace` seconds later (call
  /// repeatedly until it has exited, or, for what an exited leader left in the group, until the
  /// caller stops waiting for it).
  func stop(grace: TimeInterval, now: Date = Date()) {
    let signal: Int32? = stopping.withLock { state in
      guard let sent = state.terminateSentAt else {
        state.terminateSentAt = now
        return SIGTERM
      }
      guard !state.killSent, now.timeIntervalSince(sent) >= grace else { return nil }
      state.killSent = true
      return SIGKILL
    }
    if let signal { signalGroup(signal) }
  }

  /// Whether ``stop(grace:now:)`` was called.
  var stopRequested: Bool { stopping.withLock { $0.terminateSentAt != nil } }

  /// Whether ``stop(grace:now:)`` sent SIGKILL to the group.
  var killSent: Bool { stopping.withLock { $0.killSent } }

  /// Whether ``reap()`` collected the exited leader.
  var isReaped: Bool { reaped.withLock { $0 } }

  /// A pipe whose both ends are close-on-exec (only the coordinating thread starts programs, so
  /// none inherits them in between) and numbered 3 or above (so a dup2(2) onto
  /// descriptor 0 or 1 in the child always makes a fresh descriptor, even when mailboxctl was
  /// started with stdin or stdout closed).
  /// - Throws: ``CommandFailure`` (``ExitStatus/osError``) with pipe2's errno.
  static func pipe() throws(CommandFailure) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    guard Glibc.pipe(&fds) == 0 else {
      throw CommandFailure(.osError, "cannot create a pipe: \(Errno.current.explanation)")
    }
    for index in 0..<2 {
      let moved = fcntl(fds[index], F_DUPFD_CLOEXEC, 3)
      close(fds[index])
      fds[index] = moved
    }
    return (fds[0], fds[1])
  }
}
