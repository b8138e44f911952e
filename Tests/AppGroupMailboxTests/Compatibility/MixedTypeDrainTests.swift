import Foundation
import MailboxLocks
import Testing

@testable import AppGroupMailbox

private struct Order: Codable, Sendable, Equatable {
  var number: Int
}

private struct Refund: Codable, Sendable, Equatable {
  var number: Int
}

/// Long-running consumers of two types share one namespace: another type's message neither
/// stalls a consumer nor makes it spin, and every message reaches its type's consumer.
@Suite struct MixedTypeDrainTests {
  @Test func `Two typed drains on one namespace each get every message of their type in order`()
    async throws
  {
    let container = try TemporaryContainer()
    let orders = try container.mailbox(Order.self, limits: .init(maxMessages: 1000))
    let refunds = try container.mailbox(Refund.self, limits: .init(maxMessages: 1000))
    let gotOrders = Locked<[Int]>([])
    let gotRefunds = Locked<[Int]>([])
    let count = 60
    // Refunds first: the order consumer meets them at the head of the line.
    for number in 0..<(count / 2) { try refunds.enqueue(Refund(number: number)) }
    let orderTask = Task {
      try await orders.drain(batchSize: 4) { claim in
        gotOrders.withLock { $0.append(claim.message.number) }
      }
    }
    let refundTask = Task {
      try await refunds.drain(batchSize: 4) { claim in
        gotRefunds.withLock { $0.append(claim.message.number) }
      }
    }
    for number in 0..<count {
      if number.isMultiple(of: 2) {
        try orders.enqueue(Order(number: number))
      } else {
        try refunds.enqueue(Refund(number: count / 2 + number))
      }
    }
    // A correctness bound (a hang fails): the drains are tasks on the cooperative pool, which
    // the whole suite shares; alone this takes 0.1 s, also under ThreadSanitizer, but beside
    // the rest of the suite under a sanitizer the pool's threads can be busy for minutes.
    let finished = try await offCooperativePool {
      waitUntil(deadline: 900) {
        gotOrders.withLock { $0.count } == count / 2 && gotRefunds.withLock { $0.count } == count
      }
    }
    orderTask.cancel()
    refundTask.cancel()
    try await orderTask.value
    try await refundTask.value
    #expect(finished)
    // Each message once. (Order across the two consumers is FIFO but for a message the other
    // type's consumer held for the instant of its first look: see docs/FORMAT.md.)
    #expect(gotOrders.withLock { $0 }.sorted() == stride(from: 0, to: count, by: 2).map { $0 })
    #expect(
      gotRefunds.withLock { $0 }.sorted()
        == Array(0..<(count / 2)) + stride(from: 1, to: count, by: 2).map { count / 2 + $0 })
    #expect(container.names("pending").isEmpty)
    #expect(container.names("claimed").isEmpty)
    #expect(container.names("quarantine").isEmpty)
  }
}
