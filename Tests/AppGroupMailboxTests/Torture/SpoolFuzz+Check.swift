import Foundation

@testable import AppGroupMailbox

extension SpoolFuzz {
  /// The end of a run: an hour later (every lease lapsed, every short delay due) the mailbox
  /// delivers what is left and then a new message; the ledgers and what is left must agree.
  func check(
    _ mailboxURL: URL, _ namespace: URL, _ ledger: SoakLedger, _ planter: SpoolFuzzPlanter,
    _ report: inout Report
  ) throws {
    var violations: [String] = []
    let mailbox = try openFinal(
      mailboxURL, clock: FakeClock(start: Date().addingTimeInterval(3_600)))
    var left: [AppGroupMailbox<String>.Claim] = []
    do {
      try mailbox.performMaintenance()
      left = try mailbox.claimPending()
      for claim in left { try claim.acknowledge() }
      try mailbox.enqueue("after")
      let after = try mailbox.claimPending().map(\.message)
      if !after.contains("after") { violations.append("the mailbox no longer delivers: \(after)") }
    } catch {
      violations.append("the final drain threw: \(error)")
    }
    var claims = ledger.claims
    claims += left.map {
      ($0.message, $0.deliveryCount, Int64($0.enqueuedAt.timeIntervalSince1970 * 1_000_000))
    }
    let leftPayloads = Set(left.map(\.message))

    // Quarantined messages, by the reason-bearing names the library gave them.
    var quarantined = Set<String>()
    let quarantine = namespace.appendingPathComponent("quarantine").path
    for name in (try? FileManager.default.contentsOfDirectory(atPath: quarantine)) ?? []
    where !planter.quarantineNames.contains(name) {
      if let parsed = QuarantineName(parsing: name), let id = parsed.id?.uuidString.lowercased(),
        let payload = Self.payload(for: id)
      {
        quarantined.insert(payload)
      }
    }
    quarantined.formUnion(ledger.purgedIDs.compactMap(Self.payload(for:)))
    report.quarantinedMessages = quarantined.intersection(ledger.enqueued).count
    // Worker ids name their payload; planted ids are looked up in what the planter wrote.
    func payload(for id: String) -> String? { Self.payload(for: id) ?? planter.plantedPayloads[id] }
    let requeued = Set(ledger.requeuedIDs.compactMap(payload(for:)))
    // A copy under a second valid name is a second message to every reader, and so is a copy or
    // link still there after its original was acknowledged (docs/FORMAT.md, "Moves"): its
    // payload may be delivered again. Loss, errors, the bound and the rest still apply to it.
    let renamedCopies = Set(
      planter.redeliverableCopyIDs.compactMap { payload(for: $0.uuidString.lowercased()) })
    let readded = ledger.reimported.union(requeued).union(renamedCopies)

    // At least once, or quarantined with a reason.
    let acknowledged = Set(ledger.acknowledged)
    let lost = ledger.enqueued.subtracting(acknowledged).subtracting(leftPayloads)
      .subtracting(ledger.interrupted).subtracting(quarantined)
    if !lost.isEmpty {
      violations.append("lost (never delivered nor quarantined): \(lost.sorted().prefix(5))")
    }
    // Never beyond the recorded deliveries: each delivery of a message counts one more.
    var seen: [String: [Int]] = [:]
    for claim in claims { seen[claim.payload, default: []].append(claim.count) }
    report.deliveries = claims.count
    for (payload, counts) in seen where !readded.contains(payload) {
      if Set(counts).count != counts.count {
        violations.append("delivered twice: \(payload) with delivery counts \(counts.sorted())")
      }
    }
    let twice = Dictionary(grouping: ledger.acknowledged, by: { $0 }).filter { $0.value.count > 1 }
    for payload in twice.keys where !readded.contains(payload) {
      violations.append("acknowledged twice: \(payload)")
    }
    for payload in acknowledged.intersection(leftPayloads).subtracting(readded) {
      violations.append("acknowledged, then delivered again at the end: \(payload)")
    }
    let known = ledger.tried.union(planter.validPayloads)
    for payload in Set(claims.map(\.payload)).subtracting(known) {
      violations.append("delivered a message nobody sent: \(payload.prefix(40))")
    }
    // Explicit dates never move the implicit clock (C17): a plain enqueue is stamped about now.
    for claim in claims where !readded.contains(claim.payload) {
      if let returned = ledger.plainReturned[claim.payload],
        claim.enqueuedAt > returned + 60_000_000
      {
        violations.append(
          "implicit enqueuedAt \(claim.enqueuedAt) of \(claim.payload) is past the wall clock \(returned)"
        )
        break
      }
    }
    // Symlink targets are never read, moved or deleted.
    if FileManager.default.contents(atPath: planter.outside.path) != SpoolFuzzPlanter.outsideContent
    {
      violations.append("the file outside the mailbox that symlinks point at changed")
    }
    report.violations += violations.map { "final: \($0)" }
  }
}
