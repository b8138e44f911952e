import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Claim tokens, message ids and temporary names come from getrandom(2) 32 words at a time
/// (``KernelRandom``): each word is handed out once, never 0, and a forked child never hands out
/// its parent's.
@Suite struct ClaimTokenTests {
  @Test func `Tokens are never 0 and never repeat across many batches`() {
    var seen = Set<UInt64>()
    for _ in 0..<10_000 {
      let token = KernelRandom.next()
      #expect(token != 0)
      seen.insert(token)
    }
    #expect(seen.count == 10_000)
  }

  @Test func `Message ids are version-4 UUIDs of the RFC 9562 variant, never repeated`() throws {
    var seen = Set<UUID>()
    for _ in 0..<10_000 {
      let id = KernelRandom.messageID()
      #expect(id.uuid.6 >> 4 == 4)
      #expect(id.uuid.8 >> 6 == 0b10)
      seen.insert(id)
    }
    #expect(seen.count == 10_000)
    // The text form a message name carries parses back to the same id.
    let id = KernelRandom.messageID()
    #expect(UUID(uuidString: id.uuidString.lowercased()) == id)
    #expect(KernelRandom.temporaryName(".tmp").hasPrefix("\(getpid())-"))
  }

  @Test func `A buffer hands out each fetched token once and refills when empty`() {
    var buffer = RandomWordBuffer()
    var seen = Set<UInt64>()
    for drawn in 1...(RandomWordBuffer.batch * 3) {
      seen.insert(buffer.next())
      let left = buffer.left
      #expect(
        left == (RandomWordBuffer.batch - drawn % RandomWordBuffer.batch) % RandomWordBuffer.batch)
    }
    #expect(seen.count == RandomWordBuffer.batch * 3)
  }

  /// The page is marked MADV_WIPEONFORK: a child made by fork(2) finds no token left, so it
  /// fetches its own instead of repeating the parent's next ones, and no process id kept, so
  /// its temporary files carry its own.
  @Test func `A child made by fork finds the token buffer empty`() throws {
    var buffer = RandomWordBuffer()
    _ = buffer.next()
    let processID = buffer.processID()
    #expect(processID == getpid())
    let mappedFirst = buffer.page
    let keptPage = try #require(mappedFirst)
    let kept = keptPage.load(fromByteOffset: RandomWordBuffer.processIDOffset, as: UInt64.self)
    #expect(kept == UInt64(getpid()))
    let parentLeft = buffer.left
    #expect(parentLeft == RandomWordBuffer.batch - 1)
    let mapped = buffer.page
    let page = try #require(mapped)
    var pipeEnds: [Int32] = [0, 0]
    try #require(pipe(&pipeEnds) == 0)
    let child = fork()
    if child == 0 {
      // In the child: only a load, a write(2) and _exit(2), before anything else (fork(2) of a
      // threaded process: a check here once waited for good on a lock a parent thread held
      // when it forked, in the ThreadSanitizer run, and the parent's read with it).
      var words = (
        page.load(as: UInt64.self),
        page.load(fromByteOffset: RandomWordBuffer.processIDOffset, as: UInt64.self)
      )
      _ = write(pipeEnds[1], &words, 16)
      _exit(0)
    }
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    try #require(child > 0)
    // 60 s: a bound on a child that never writes (a hang), not a latency figure.
    var ready = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
    let polled = poll(&ready, 1, 60_000)
    if polled != 1 { kill(child, SIGKILL) }
    #expect(polled == 1)
    var childWords: (left: UInt64, processID: UInt64) = (.max, .max)
    if polled == 1 { #expect(read(pipeEnds[0], &childWords, 16) == 16) }
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    #expect(childWords.left == 0)
    #expect(childWords.processID == 0)
    let leftAfter = buffer.left
    #expect(leftAfter == RandomWordBuffer.batch - 1)
  }
}
