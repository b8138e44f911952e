import Foundation
import Testing

@testable import AppGroupMailbox

/// Issue 16, step 2: one claim core, one lifetime rule for the typed and the raw claim (the
/// typed rule is checked in RecoveryTests, as the package we follow checks it).
@Suite struct ClaimLifetimeTests {
  @Test
  func `A raw claim follows the same lifetime rule: mailboxDeallocated once its mailbox is gone`()
    throws
  {
    let container = try TemporaryContainer()
    var mailbox: AppGroupRawMailbox? = try container.rawMailbox()
    try mailbox!.enqueue(Data("1".utf8))
    try mailbox!.enqueue(Data("2".utf8))
    let claims = try mailbox!.claimPending()
    let rebuilt = try mailbox!.claim(token: claims[1].token)
    weak let weakMailbox = mailbox
    mailbox = nil
    #expect(weakMailbox == nil)
    let methods: [(String, () throws -> Void)] = [
      ("acknowledge", claims[0].acknowledge), ("release", claims[0].release),
      ("release(retryAfter:)", { try claims[0].release(retryAfter: 5) }),
      ("deadLetter", claims[0].deadLetter), ("renew", claims[1].renew),
      ("acknowledge by token", rebuilt.acknowledge),
    ]
    for (method, call) in methods {
      #expect(throws: AppGroupMailboxError.mailboxDeallocated, "\(method)") { try call() }
    }
    #expect(claims[0].leaseDeadline != nil)
    #expect(container.claimedNames().count == 2)
  }
}
