import CMailboxShims
import Foundation
import Glibc
import MailboxLocks

/// Random words from the kernel's random source (getrandom(2)), fetched ``RandomWordBuffer/batch`` at a
/// time: one system call per 32 words instead of one (or, for a message id, three) per use. They
/// are the claimed names' tokens (``ClaimedName/token``), message ids and the suffixes of
/// temporary file names.
///
/// The words are the same kernel random bytes, only fetched ahead, so they are as hard to guess
/// as before (docs/FORMAT.md: a token keeps a stale holder from acting on a newer claim of the
/// same message). Each word is handed out once and wiped from the buffer. The buffer lives in
/// a page marked `MADV_WIPEONFORK` (madvise(2), Linux 4.14), which the kernel zeroes in a child
/// made by fork(2), so a parent and its child never hand out the same words: the child finds
/// the buffer empty and refills it. Where the kernel refuses that mark, or a refill fails, every
/// word is drawn alone (`SystemRandomNumberGenerator`), as before.
///
/// Thread safety: every member may be called from any thread.
enum KernelRandom {
  // `Locked`, not a bare `Mutex`: ThreadSanitizer cannot see a Mutex's futex on Linux and
  // reported every refill as a race.
  private static let buffer = Locked(RandomWordBuffer())

  /// A fresh random word, never 0.
  static func next() -> UInt64 { buffer.withLock { $0.next() } }

  /// A random message id: a version-4 UUID (RFC 9562, section 5.4: 122 random bits, the
  /// version and variant bits set). Foundation's `UUID()` on Linux opens, reads and closes
  /// `/dev/urandom` for every id (three system calls an enqueue, seen with strace(1)); this
  /// takes two words from the buffer.
  static func messageID() -> UUID {
    let (high, low) = buffer.withLock { ($0.next(), $0.next()) }
    var bytes = (high.bigEndian, low.bigEndian)
    return withUnsafeMutableBytes(of: &bytes) { raw in
      raw[6] = raw[6] & 0x0F | 0x40  // version 4
      raw[8] = raw[8] & 0x3F | 0x80  // variant 10 (RFC 9562)
      return UUID(uuid: raw.load(as: uuid_t.self))
    }
  }

  /// The name of a new temporary file: `<pid>-<1 to 16 hex digits><suffix>` (`suffix` such as
  /// `.tmp`), unique across processes with `O_EXCL`. The process id is kept in the buffer's
  /// page, which fork(2) wipes, so it costs a getpid(2) once per process, not per file.
  static func temporaryName(_ suffix: String) -> String {
    let (process, word) = buffer.withLock { ($0.processID(), $0.next()) }
    return "\(process)-\(String(word, radix: 16))\(suffix)"
  }
}

/// Random words fetched ahead into a page the kernel wipes on fork(2) (see ``KernelRandom``).
/// Not thread-safe by itself.
struct RandomWordBuffer: ~Copyable {
  /// Words fetched by one getrandom(2) (8 bytes each; 256 bytes, which getrandom(2) delivers
  /// whole).
  static let batch = 32
  static let pageSize = 4096
  /// Where in the page the process id is kept: after the count and the words.
  static let processIDOffset = 8 + batch * 8

  /// The page: the count of words left (8 bytes), then the words, then the process id (8
  /// bytes, 0 until asked); nil when there is none.
  private(set) var page: UnsafeMutableRawPointer?
  private var prepared = false

  init() {}

  deinit {
    if let page { munmap(page, Self.pageSize) }
  }

  /// How many fetched words are left in the page (0 in a child after fork(2)).
  var left: Int { page.map { Int($0.load(as: UInt64.self)) } ?? 0 }

  /// A fresh token, never 0.
  mutating func next() -> UInt64 {
    guard let page = preparedPage() else { return UInt64.random(in: 1 ... .max) }
    while true {
      var left = Int(page.load(as: UInt64.self))  // 0 in a child after fork(2): wiped
      if left == 0 || left > Self.batch {
        guard cmailbox_random_bytes(page + 8, UInt(Self.batch * 8)) == 0 else {
          return UInt64.random(in: 1 ... .max)
        }
        left = Self.batch
      }
      left -= 1
      let token = page.load(fromByteOffset: 8 + left * 8, as: UInt64.self)
      page.storeBytes(of: 0, toByteOffset: 8 + left * 8, as: UInt64.self)
      page.storeBytes(of: UInt64(left), as: UInt64.self)
      if token != 0 { return token }
    }
  }

  /// This process's id: getpid(2) once, then kept in the page, which a forked child finds
  /// wiped (so it asks again); getpid(2) every time without the page.
  mutating func processID() -> pid_t {
    guard let page = preparedPage() else { return getpid() }
    let kept = page.load(fromByteOffset: Self.processIDOffset, as: UInt64.self)
    if kept != 0 { return pid_t(truncatingIfNeeded: kept) }
    let id = getpid()
    page.storeBytes(
      of: UInt64(UInt32(bitPattern: id)), toByteOffset: Self.processIDOffset, as: UInt64.self)
    return id
  }

  /// The page, made at the first use; nil when it could not be made.
  private mutating func preparedPage() -> UnsafeMutableRawPointer? {
    if !prepared {
      prepared = true
      page = Self.makePage()
    }
    return page
  }

  /// A private anonymous page the kernel wipes in a forked child; nil when either call fails.
  private static func makePage() -> UnsafeMutableRawPointer? {
    guard
      let page = mmap(nil, pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
      page != MAP_FAILED
    else { return nil }
    guard madvise(page, pageSize, 18 /* MADV_WIPEONFORK, linux/mman.h */) == 0 else {
      munmap(page, pageSize)
      return nil
    }
    return page
  }
}
