import Foundation
import Testing

@testable import AppGroupMailbox

/// The events sequence's buffer is bounded: a slow iteration gets an `overflowed` marker where
/// events were dropped, never unbounded memory.
@Suite struct EventBufferTests {
  private func event(_ index: Int) -> AppGroupMailboxEvent {
    AppGroupMailboxEvent(
      kind: .enqueued, id: UUID(), date: Date(timeIntervalSince1970: Double(index)))
  }

  @Test func `A full buffer ends with one overflowed event and drops what follows until taken`()
    async throws
  {
    let (stream, continuation) = AsyncThrowingStream<AppGroupMailboxEvent, any Error>.makeStream(
      bufferingPolicy: .bufferingOldest(5))
    let first = (0..<20).map(event)
    AppGroupMailboxEvents.deliver(first, to: continuation)
    var iterator = stream.makeAsyncIterator()
    var taken: [AppGroupMailboxEvent] = []
    for _ in 0..<5 { taken.append(try #require(try await iterator.next())) }
    #expect(taken.prefix(4).map(\.id) == first.prefix(4).map(\.id))
    #expect(taken.map(\.kind) == [.enqueued, .enqueued, .enqueued, .enqueued, .overflowed])
    #expect(taken.last?.id == nil)
    // Room again: later events are kept, after the marker.
    let later = (20..<22).map(event)
    AppGroupMailboxEvents.deliver(later, to: continuation)
    continuation.finish()
    var rest: [AppGroupMailboxEvent] = []
    while let next = try await iterator.next() { rest.append(next) }
    #expect(rest.map(\.id) == later.map(\.id))
  }

  @Test func `A buffer limit below 2 is refused`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    #expect(throws: AppGroupMailboxError.invalidLimit("bufferLimit")) {
      _ = try mailbox.inspector.events(bufferLimit: 1)
    }
    let events = try mailbox.inspector.events(bufferLimit: 2)
    events.close()
  }
}
