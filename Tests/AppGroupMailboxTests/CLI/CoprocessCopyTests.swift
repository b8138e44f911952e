import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

extension TemporaryContainer {
  /// Puts a second file with the id of the one pending message of namespace `jobs` into its
  /// pending area, one sequence number later: a copy of the file (not a hard link, which a
  /// claim leaves alone while it is young), a second message (docs/FORMAT.md).
  func addPendingCopy() throws {
    let pending = url.appendingPathComponent("AppGroupMailbox/jobs/pending")
    let original = try #require(
      try FileManager.default.contentsOfDirectory(atPath: pending.path).first)
    let name = try #require(PendingName(parsing: original))
    let copy = PendingName(
      key: MessageKey(
        micros: name.key.micros, sequence: name.key.sequence + 1, level: name.key.level),
      id: name.id, attempts: 0)
    let staged = url.appendingPathComponent("copy")
    try Data(contentsOf: pending.appendingPathComponent(original)).write(to: staged)
    #expect(rename(staged.path, pending.appendingPathComponent(copy.fileName).path) == 0)
  }
}

/// A second file with the id of a message in flight waits behind it (docs/HANDLER-PROTOCOL.md).
@Suite struct CoprocessCopyTests {
  /// Found by an adversarial review: when drain was stalled past the leases (SIGSTOP here) and
  /// another consumer recovered and claimed both files, the copy waiting behind was still sent
  /// to the handler once the first was answered, on a claim drain no longer held: two holders
  /// worked on it at once.
  @Test func `A waiting copy whose claim is gone is not sent to the handler`() throws {
    let container = try TemporaryContainer()
    try container.rawMailbox(limits: .init(claimTimeout: 1)).enqueue(Data("1".utf8))
    try container.addPendingCopy()
    let log = container.url.appendingPathComponent("log")
    let go = container.url.appendingPathComponent("go")
    // Logs each message it gets, then answers it once the file `go` exists.
    let body = """
      for line in sys.stdin:
          with open(\(JSONText.string(log.path)), "a") as f:
              f.write("got\\n")
          while not os.path.exists(\(JSONText.string(go.path))):
              time.sleep(0.01)
          sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "action": "ack"}) + "\\n")
          sys.stdout.flush()

      """
    let drain = try Mailboxctl.start(
      ["drain"] + container.arguments()
        + ["--jobs", "2", "--claim-timeout", "1"]
        + (try PythonHandler.greeted(body, importing: "json, os, sys, time", in: container)))
    defer { if drain.process.isRunning { drain.signal(SIGKILL) } }
    let got = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    // The first file in flight, the copy claimed behind it.
    #expect(waitUntil(deadline: 60) { got() == "got\n" })
    drain.signal(SIGSTOP)
    // Stalled past both leases: another consumer recovers and claims both files.
    let other = try container.rawMailbox(limits: .init(claimTimeout: 600))
    var taken: [AppGroupRawMailbox.Claim] = []
    #expect(
      waitUntil(deadline: 60) {
        taken += (try? other.claimPending(limit: 2)) ?? []
        return taken.count == 2
      })
    drain.signal(SIGCONT)
    #expect(FileManager.default.createFile(atPath: go.path, contents: nil))
    let finished = try drain.finish(deadline: 60)
    // The handler never got the copy; the other consumer's claims are untouched.
    #expect(got() == "got\n", "\(finished.stderr)")
    for claim in taken { try claim.acknowledge() }
  }
}
