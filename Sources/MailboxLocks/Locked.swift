public import CMailboxShims
public import Synchronization

/// A value guarded by a `Mutex` (Synchronization), whose lock and unlock ThreadSanitizer can see.
///
/// On Linux `Mutex` waits with futex(2) directly, which ThreadSanitizer does not intercept, so
/// every access it guards is reported as a race. This wrapper tells ThreadSanitizer about each
/// hold (`__tsan_acquire` after locking, `__tsan_release` before unlocking, see
/// compiler-rt's tsan_interface.h); in a build without ThreadSanitizer those calls do nothing.
/// Use it wherever the package would use `Mutex`. Thread-safe; not reentrant.
///
/// Its members are inlinable so that callers in other modules get code specialized for their
/// value type: unspecialized, each hold looked up `Mutex<Value>`'s type metadata at run time
/// (several hundred instructions per call, the largest user-space cost of a claim).
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
  @usableFromInline let mutex: Mutex<Value>

  /// Creates a lock guarding `value`.
  @inlinable public init(_ value: consuming sending Value) {
    mutex = Mutex(value)
  }

  /// Runs `body` with exclusive access to the value and returns its result.
  @inlinable public func withLock<Result: ~Copyable, E: Error>(
    _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    try mutex.withAnnotatedLock(at: Unmanaged.passUnretained(self).toOpaque(), body)
  }
}

extension Mutex where Value: ~Copyable {
  /// `withLock(_:)` with the hold told to ThreadSanitizer as ``Locked`` tells it, under
  /// `address`: for a `Mutex` stored in a final class of its own (which passes its own address).
  /// ``Locked`` is generic, so destroying one runs its unspecialized deinit, which looks up the
  /// metadata of `Mutex<Value>` each time (about 1,600 instructions); a non-generic class's deinit
  /// destroys its `Mutex` without that. Use it where a lock is made and dropped per operation (a
  /// claim's), ``Locked`` elsewhere. Thread-safe; not reentrant.
  @inlinable public borrowing func withAnnotatedLock<Result: ~Copyable, E: Error>(
    at address: UnsafeMutableRawPointer, _ body: (inout sending Value) throws(E) -> sending Result
  ) throws(E) -> sending Result {
    try withLock { (value: inout sending Value) throws(E) -> sending Result in
      cmailbox_tsan_acquire(address)
      defer { cmailbox_tsan_release(address) }
      return try body(&value)
    }
  }
}
