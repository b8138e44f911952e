import Foundation
import Testing

@testable import AppGroupMailbox

/// Cancel raced with a claim from another real process (issue 17 item 6): exactly one wins.
@Suite struct CancelRaceTests {
  /// One run: a claiming process spins on claims while a cancelling process enqueues a message,
  /// lets the scheduler run a random number of times and cancels it, `rounds` times. Returns
  /// how many the cancel won and how many the claim won, after checking every round.
  func race(rounds: Int) throws -> (cancelled: Int, claimed: Int) {
    let container = try TemporaryContainer()
    let ready = container.url.appendingPathComponent("ready").path
    let stop = container.url.appendingPathComponent("stop").path
    let base = [container.url.path, "jobs", ready, stop]
    let worker = Processes.product("MailboxTestWorker")
    let claimer = try Processes.start(worker, ["cancel-race-claim"] + base)
    let canceller = try Processes.start(worker, ["cancel-race-cancel"] + base + ["\(rounds)"])
    let cancels = try canceller.finish(deadline: 300)
    let claims = try claimer.finish(deadline: 300)
    try #require(cancels.status == 0, "\(cancels.stderr)")
    try #require(claims.status == 0, "\(claims.stderr)")
    let claimedIDs = claims.lines
    #expect(Set(claimedIDs).count == claimedIDs.count)
    let outcomes = cancels.lines.map { $0.split(separator: " ").map(String.init) }
    try #require(outcomes.count == rounds)
    let claimedSet = Set(claimedIDs)
    var cancelled = 0
    for fields in outcomes {
      // Exactly one wins: the claim holds it (cancel refused) or the cancel removed it.
      let expected = claimedSet.contains(fields[0]) ? "claimed" : "cancelled"
      #expect(fields[1] == expected, "\(fields)")
      if fields[1] == "cancelled" { cancelled += 1 }
    }
    #expect(claimedSet.isSubset(of: Set(outcomes.map { $0[0] })))
    // The counters stay right: only the held claims remain.
    let status = try container.rawMailbox().inspector.status()
    #expect(status.pending == 0 && status.delayed == 0 && status.quarantined == 0)
    #expect(status.claimed == claimedIDs.count)
    try container.expectDepth(claimedIDs.count)
    return (cancelled, claimedIDs.count)
  }

  @Test func `Cancel raced with a claim in another process: exactly one wins, every round`()
    async throws
  {
    let totals = try await offCooperativePool { [self] in
      // Rounds until each side won at least 25 times (a few runs at most), so both orders of
      // the race are exercised.
      var totals = (cancelled: 0, claimed: 0, rounds: 0)
      while totals.rounds < 2_000, totals.cancelled < 25 || totals.claimed < 25 {
        let run = try race(rounds: 400)
        totals = (
          totals.cancelled + run.cancelled, totals.claimed + run.claimed, totals.rounds + 400
        )
      }
      return totals
    }
    #expect(totals.cancelled + totals.claimed == totals.rounds)
    #expect(totals.cancelled >= 25, "cancel won \(totals.cancelled) of \(totals.rounds)")
    #expect(totals.claimed >= 25, "claim won \(totals.claimed) of \(totals.rounds)")
  }
}
