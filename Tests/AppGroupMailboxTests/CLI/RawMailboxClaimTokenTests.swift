import Foundation
import Testing

@testable import AppGroupMailbox

/// ``AppGroupRawMailbox/ClaimToken`` and ``AppGroupRawMailbox/claim(token:)``: a claim rebuilt
/// from its token by another mailbox instance acts on the same claim.
@Suite struct RawMailboxClaimTokenTests {
  @Test func `A token round-trips and only its one spelling parses`() throws {
    let token = AppGroupRawMailbox.ClaimToken(
      id: try #require(UUID(uuidString: "6a1d3c9e-0f3b-4d0e-8b7a-2c5e4f1a9b3d")), nonce: 0xab)
    let text = "6a1d3c9e-0f3b-4d0e-8b7a-2c5e4f1a9b3d.00000000000000ab"
    #expect(token.description == text)
    #expect(AppGroupRawMailbox.ClaimToken(text) == token)
    for bad in [
      text.uppercased(), String(text.dropFirst()), text + "a",
      text.replacingOccurrences(
        of: ".", with: "-"), "6a1d3c9e-0f3b-4d0e-8b7a-2c5e4f1a9b3d.+0000000000000ab",
      "6a1d3c9e-0f3b-4d0e-8b7a-2c5e4f1a9b3d.0000000000000g0b", "../" + text.dropFirst(3),
      "6a1d3c9e0f3b4d0e8b7a2c5e4f1a9b3d....00000000000000ab", "",
    ] {
      #expect(AppGroupRawMailbox.ClaimToken(bad) == nil, "\(bad)")
    }
  }

  @Test func `A claim rebuilt from its token acknowledges, releases and renews the same claim`()
    throws
  {
    let container = try TemporaryContainer()
    let producer = try container.rawMailbox()
    try producer.enqueue(Data("1".utf8))
    try producer.enqueue(Data("2".utf8))
    let original = try #require(try producer.claimPending(limit: 1).first)
    let other = try container.rawMailbox(limits: AppGroupMailboxLimits(claimTimeout: 5_000))
    let rebuilt = try other.claim(token: original.token)
    #expect(rebuilt.id == original.id && rebuilt.payload == original.payload)
    #expect(rebuilt.deliveryCount == 1 && rebuilt.token == original.token)
    #expect(rebuilt.leaseDeadline == original.leaseDeadline)
    try rebuilt.renew()
    let lease = try #require(rebuilt.leaseDeadline)
    #expect(lease.timeIntervalSinceNow > 4_000)
    #expect(try other.claim(token: original.token).leaseDeadline == lease)
    // The original handle still names the old lease's file, and finds the claim renewed under
    // its nonce: it acts on it (it threw claimNoLongerExists, and its holder's acknowledge of
    // a live claim failed, found by an adversarial review).
    try original.renew()
    #expect(try #require(original.leaseDeadline) > Date())
    try original.release()
    #expect(original.leaseDeadline == nil)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) { try rebuilt.release() }
    #expect(rebuilt.leaseDeadline == nil)
    #expect(throws: AppGroupMailboxError.claimNoLongerExists) {
      try other.claim(token: original.token)
    }
    let again = try producer.claimPending()
    #expect(again.map { String(decoding: $0.payload, as: UTF8.self) } == ["1", "2"])
    #expect(again[0].token != original.token)
    try other.claim(token: again[0].token).acknowledge()
    #expect(container.names("claimed").count == 1)
  }
}
