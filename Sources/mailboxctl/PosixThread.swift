import AppGroupMailbox
import Foundation
import Glibc

/// Starts a closure on a POSIX thread of its own (pthread_create(3)). Unlike Foundation's
/// `Thread.detachNewThread`, a thread that cannot be made (EAGAIN at the process's or the
/// system's thread limit, or for want of memory) is reported to the caller, which must then not
/// count on the work being done.
enum PosixThread {
  /// The closure and nothing else, handed to the new thread through one retained reference.
  private final class Body {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
  }

  /// Runs `body` on a new thread. `joinable`: the caller joins it (pthread_join(3)) with the
  /// handle returned; otherwise it is detached and nil is returned.
  /// - Throws: ``CommandFailure`` (``ExitStatus/osError``) "cannot start a thread to
  ///   `purpose`" with the errno of pthread_create(3); `body` never runs then.
  @discardableResult
  static func start(
    joinable: Bool, to purpose: String, _ body: @escaping @Sendable () -> Void
  ) throws(CommandFailure) -> pthread_t? {
    if let refused = refusedForTests(purpose) {
      throw CommandFailure(
        .osError, "cannot start a thread to \(purpose): \(Errno(rawValue: refused).explanation)")
    }
    let context = Unmanaged.passRetained(Body(body))
    var handle = pthread_t()
    let result = pthread_create(
      &handle, nil,
      { raw in
        guard let raw else { return nil }
        Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
        return nil
      }, context.toOpaque())
    guard result == 0 else {
      context.release()
      throw CommandFailure(
        .osError, "cannot start a thread to \(purpose): \(Errno(rawValue: result).explanation)")
    }
    if joinable { return handle }
    pthread_detach(handle)
    return nil
  }

  /// Debug builds only (what the tests run): EAGAIN for a thread whose purpose starts with
  /// `$MAILBOXCTL_TEST_REFUSE_THREAD`, so tests reach the paths of a process at its thread
  /// limit, which root (the CI's user) cannot be held to with RLIMIT_NPROC. Nil otherwise.
  private static func refusedForTests(_ purpose: String) -> Int32? {
    #if DEBUG
      let refused = ProcessInfo.processInfo.environment["MAILBOXCTL_TEST_REFUSE_THREAD"] ?? ""
      if !refused.isEmpty, purpose.hasPrefix(refused) { return EAGAIN }
    #endif
    return nil
  }
}
