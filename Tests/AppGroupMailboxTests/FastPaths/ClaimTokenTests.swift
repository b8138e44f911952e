import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Claim tokens come from getrandom(2) 32 at a time (``ClaimTokens``): each is handed out once,
/// never 0, and a forked child never hands out its parent's.
@Suite struct ClaimTokenTests {
  @Test func `Tokens are never 0 and never repeat across many batches`() {
    var seen = Set<UInt64>()
    for _ in 0..<10_000 {
      let token = ClaimTokens.next()
      #expect(token != 0)
      seen.insert(token)
    }
    #expect(seen.count == 10_000)
  }

  @Test func `A buffer hands out each fetched token once and refills when empty`() {
    var buffer = TokenBuffer()
    var seen = Set<UInt64>()
    for drawn in 1...(TokenBuffer.batch * 3) {
      seen.insert(buffer.next())
      let left = buffer.left
      #expect(left == (TokenBuffer.batch - drawn % TokenBuffer.batch) % TokenBuffer.batch)
    }
    #expect(seen.count == TokenBuffer.batch * 3)
  }

  /// The page is marked MADV_WIPEONFORK: a child made by fork(2) finds no token left, so it
  /// fetches its own instead of repeating the parent's next ones.
  @Test func `A child made by fork finds the token buffer empty`() throws {
    var buffer = TokenBuffer()
    _ = buffer.next()
    let parentLeft = buffer.left
    #expect(parentLeft == TokenBuffer.batch - 1)
    let mapped = buffer.page
    let page = try #require(mapped)
    var pipeEnds: [Int32] = [0, 0]
    try #require(pipe(&pipeEnds) == 0)
    let child = fork()
    try #require(child >= 0)
    if child == 0 {
      // In the child: only a load, a write(2) and _exit(2).
      var left = page.load(as: UInt64.self)
      _ = write(pipeEnds[1], &left, 8)
      _exit(0)
    }
    close(pipeEnds[1])
    defer { close(pipeEnds[0]) }
    var childLeft: UInt64 = .max
    #expect(read(pipeEnds[0], &childLeft, 8) == 8)
    var status: Int32 = 0
    _ = waitpid(child, &status, 0)
    #expect(childLeft == 0)
    let leftAfter = buffer.left
    #expect(leftAfter == TokenBuffer.batch - 1)
  }
}
