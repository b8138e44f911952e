import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

private struct Job: Codable, Sendable, Equatable {
  var number: Int
  var text: String
}

/// A keyed replacement into a message a typed consumer passed over as another type's (found by
/// an adversarial review: the consumer went on passing over the new message, its own type, under
/// the id it remembered, until the message's lifetime ended or the process restarted). Every way
/// the consumer's index can learn of the new file is covered: the inotify event of the exchange,
/// the listing after an overflow, the listing of every claim without inotify, and a wait.
@Suite struct KeyPassedOverTests {
  // Computed, not stored: a stored `static let` Data of more than 14 bytes keeps its storage's
  // address with enum tag bits in a global, which LeakSanitizer does not recognise as a pointer
  // (a false leak report that failed CI).
  static var invoice: Data { Data("{\"total\":1}".utf8) }
  static var job: Data { Data("{\"number\":7,\"text\":\"new\"}".utf8) }

  /// Enqueues an `Invoice` under key `k` with `raw` and lets `jobs` pass it over twice (the
  /// second claim must not touch it); returns its id and pending name.
  fileprivate func passedOver(
    _ raw: AppGroupRawMailbox, _ jobs: AppGroupMailbox<Job>, _ container: TemporaryContainer
  ) throws -> (UUID, String) {
    let first = try raw.enqueue(
      Self.invoice, key: "k", onConflict: .replace, messageType: "Invoice")
    guard case .enqueued(let id) = first else { throw KeyFailure(first) }
    #expect(try jobs.claimPending().isEmpty)
    #expect(try jobs.claimPending().isEmpty)
    let names = container.names("pending")
    #expect(names.count == 1)
    #expect(container.pendingNames().map(\.attempts) == [0])
    return (id, try #require(names.first))
  }

  @Test
  func
    `A replacement swapped in with RENAME_EXCHANGE is claimed by the consumer that passed over its name`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let (id, name) = try passedOver(raw, jobs, container)
    let replaced = try raw.enqueue(Self.job, key: "k", onConflict: .replace, messageType: "Job")
    #expect(replaced == .replaced(id))
    #expect(container.names("pending") == [name])
    let claims = try jobs.claimPending()
    #expect(claims.map(\.message) == [Job(number: 7, text: "new")])
    #expect(claims.map(\.id) == [id])
    #expect(container.quarantined().isEmpty)
  }

  @Test func `A replacement published under a new id without RENAME_EXCHANGE is claimed too`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let (id, _) = try passedOver(raw, jobs, container)
    let (replaced, unfired) = try FaultInjection.withRules([
      .init(call: "renameat2", errno: EINVAL)
    ]) { try raw.enqueue(Self.job, key: "k", onConflict: .replace, messageType: "Job") }
    #expect(unfired.isEmpty)
    guard case .replaced(let newID) = replaced else { throw KeyFailure(replaced) }
    #expect(newID != id)
    #expect(try jobs.claimPending().map(\.message) == [Job(number: 7, text: "new")])
    #expect(container.names("pending").isEmpty)
  }

  @Test func `A replacement whose event was lost to an overflow is claimed after the listing`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let (id, _) = try passedOver(raw, jobs, container)
    #expect(
      try raw.enqueue(Self.job, key: "k", onConflict: .replace, messageType: "Job") == .replaced(id)
    )
    // What IN_Q_OVERFLOW does: the queued names are dropped and the next claim lists.
    jobs.spool.pendingIndex.invalidate()
    #expect(try jobs.claimPending().map(\.message) == [Job(number: 7, text: "new")])
  }

  @Test func `Without inotify a replacement is claimed on the next listing`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    // A simulated inotify limit during the first claim (for every watch it adds: the index's
    // and SpoolArrivals'): every claim lists from then on.
    _ = FaultInjection.withRules([
      .init(call: "inotify_add_watch", errno: ENOSPC, count: Int.max)
    ]) { #expect(throws: Never.self) { try jobs.claimPending() } }
    #expect(!jobs.spool.pendingIndex.isWatching)
    let (id, _) = try passedOver(raw, jobs, container)
    #expect(
      try raw.enqueue(Self.job, key: "k", onConflict: .replace, messageType: "Job") == .replaced(id)
    )
    #expect(try jobs.claimPending().map(\.message) == [Job(number: 7, text: "new")])
  }

  @Test func `wait(timeout:) returns for a replacement into a name the consumer passed over`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let (id, _) = try passedOver(raw, jobs, container)
    // Nothing for this consumer yet: a wait that looks once says so.
    #expect(try !jobs.wait(timeout: 0))
    #expect(
      try raw.enqueue(Self.job, key: "k", onConflict: .replace, messageType: "Job") == .replaced(id)
    )
    #expect(try jobs.wait(timeout: 60))
    #expect(try jobs.claimPending().map(\.message) == [Job(number: 7, text: "new")])
  }

  @Test func `A replacement that is still another type's is read once more, then passed over`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let (id, name) = try passedOver(raw, jobs, container)
    let other = Data("{\"total\":2}".utf8)
    #expect(
      try raw.enqueue(other, key: "k", onConflict: .replace, messageType: "Invoice")
        == .replaced(id))
    #expect(try jobs.claimPending().isEmpty)
    let changed = try ctime(container, name)
    #expect(try jobs.claimPending().isEmpty)
    #expect(try jobs.claimPending().isEmpty)
    #expect(try ctime(container, name) == changed)
    #expect(container.pendingNames().map(\.attempts) == [0])
    #expect(try container.pendingFiles().map(\.message) == ["{\"total\":2}"])
  }

  /// Each consumer's put-back is an arrival the other's index sees: a consumer must tell the
  /// same file back under the name from a new one, or two types would take turns reading it.
  @Test func `Two consumers passing over a third type's message stop renaming it`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let strings = try container.mailbox(String.self)
    try raw.enqueue(Self.invoice, messageType: "Invoice")
    #expect(try jobs.claimPending().isEmpty)
    #expect(try strings.claimPending().isEmpty)
    #expect(try jobs.claimPending().isEmpty)
    #expect(try strings.claimPending().isEmpty)
    let name = try #require(container.names("pending").first)
    let changed = try ctime(container, name)
    for _ in 0..<3 {
      #expect(try jobs.claimPending().isEmpty)
      #expect(try strings.claimPending().isEmpty)
    }
    #expect(try ctime(container, name) == changed)
    #expect(container.pendingNames().map(\.attempts) == [0])
  }

  private func ctime(_ container: TemporaryContainer, _ name: String) throws -> Int {
    var info = stat()
    guard lstat(container.area("pending").appendingPathComponent(name).path, &info) == 0 else {
      throw POSIXError(.ENOENT)
    }
    return info.st_ctim.tv_sec * 1_000_000_000 + info.st_ctim.tv_nsec
  }
}

/// The identity a passed-over mark records is the inode with the size and modification time:
/// ext4 hands a freed inode number to the next new file at once, so two replacements in a row
/// may leave the name with the very inode number that was passed over.
@Suite struct PassedOverIdentityTests {
  @Test func `A same-size file under the passed-over inode number is read when its mtime differs`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    let jobs = try container.mailbox(Job.self)
    let first = try raw.enqueue(
      Data("{\"total\":1,\"note\":\"\(String(repeating: "n", count: 200))\"}".utf8), key: "k",
      onConflict: .replace, messageType: "Invoice")
    #expect(try jobs.claimPending().isEmpty)
    #expect(try jobs.claimPending().isEmpty)
    let fileName = try #require(container.names("pending").first)
    let pendingName = try #require(PendingName(parsing: fileName))
    let path = container.area("pending").appendingPathComponent(fileName).path
    var before = stat()
    try #require(lstat(path, &before) == 0)
    // What inode reuse leaves: the same inode number, here also the same size, other bytes
    // written later. (The library never rewrites a file in place: this stands in for a new
    // file given the reused number.)
    func job(_ text: String) throws -> Data {
      try Envelope.encode(
        id: first.id, enqueuedAt: pendingName.key.micros, messageType: "Job",
        payload: Data("{\"number\":8,\"text\":\"\(text)\"}".utf8))
    }
    let padding = Int(before.st_size) - (try job("")).count
    try #require(padding > 0)
    let text = String(repeating: "r", count: padding)
    let bytes = try job(text)
    try #require(bytes.count == Int(before.st_size))
    let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
    try #require(fd >= 0)
    defer { close(fd) }
    try #require(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
    var times = [
      before.st_atim, timespec(tv_sec: before.st_mtim.tv_sec + 1, tv_nsec: before.st_mtim.tv_nsec),
    ]
    try #require(futimens(fd, &times) == 0)
    var after = stat()
    try #require(lstat(path, &after) == 0)
    #expect(after.st_ino == before.st_ino)
    #expect(after.st_size == before.st_size)
    // No arrival was reported (nothing was renamed): a listing, as after an overflow, looks.
    jobs.spool.pendingIndex.invalidate()
    #expect(try jobs.claimPending().map(\.message) == [Job(number: 8, text: text)])
  }
}
