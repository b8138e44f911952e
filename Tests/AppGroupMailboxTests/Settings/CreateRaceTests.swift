import Foundation
import Testing

@testable import AppGroupMailbox

/// Two `mailboxctl create` processes racing with different settings: the settings stored are
/// one creator's, whole (never one's limits with the other's sharing mode), and only that
/// creator exits 0; the other exits 73. (From a new user's trial: both exited 0 and the
/// stored settings mixed the two.)
@Suite struct CreateRaceTests {
  @Test func `Racing creates store one creator's settings whole, and the other exits 73`() throws {
    var outcomes: [String: Int] = [:]
    for round in 0..<20 {
      let container = try TemporaryContainer()
      let location = container.arguments()
      let small = try Mailboxctl.start(["create"] + location + ["--max-messages", "11"])
      let large = try Mailboxctl.start(
        ["create"] + location + ["--max-messages", "22", "--group-shared"])
      let (first, second) = (try small.finish(deadline: 60), try large.finish(deadline: 60))
      let stored = try #require(
        try jsonLines(try Mailboxctl.run(["config"] + location + ["--json"]).stdout).first)
      let maxMessages = stored["maxMessages"] as? Int
      let sharing = stored["sharing"] as? String
      #expect(
        (maxMessages == 11 && sharing == "private")
          || (maxMessages == 22 && sharing == "group-shared"),
        "round \(round): stored \(stored)")
      let winner = maxMessages == 11 ? first : second
      let loser = maxMessages == 11 ? second : first
      #expect(winner.status == 0, "round \(round): \(winner.stderr)")
      #expect(loser.status == 73, "round \(round): \(loser.status) \(loser.stderr)")
      outcomes[maxMessages == 11 ? "small" : "large", default: 0] += 1
    }
    #expect(outcomes.values.reduce(0, +) == 20)
  }
}
