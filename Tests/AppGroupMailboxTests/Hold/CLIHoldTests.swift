import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// Issue 17, item 1 from the shell: `mailboxctl hold|resume`, `status` showing the hold, and a
/// `drain --follow` in another process that stops claiming on hold and goes on after resume.
@Suite struct CLIHoldTests {
  /// The `message` values of the complete JSON lines `text` holds so far.
  func messages(_ text: String) -> [Int64] {
    text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
      guard
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      else { return nil }
      return (object["message"] as? NSNumber)?.int64Value
    }
  }

  /// Of holds (or resumes) at once, exactly one says it changed the hold: both printed "held"
  /// when each read the hold before taking the lock (stop 33's named leftovers). Rounds of two
  /// processes started together; the library's answer is decided under the namespace lock.
  @Test func `Of two holds at once exactly one prints held`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let raw = try container.rawMailbox()
    for _ in 0..<8 {
      for (verb, changed, unchanged) in [
        ("hold", "held", "already held"), ("resume", "resumed", "not held"),
      ] {
        let runs = try (0..<2).map { _ in try Mailboxctl.start([verb] + location) }
        let outputs = try runs.map { try $0.finish() }
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        #expect(
          outputs.map(\.stdout).sorted() == ["jobs: \(unchanged)\n", "jobs: \(changed)\n"].sorted())
      }
    }
    // The library's own answer, from two instances (two locks) in threads at once.
    let other = try container.rawMailbox()
    for _ in 0..<8 {
      let answers = Locked<[Bool]>([])
      let group = DispatchGroup()
      for mailbox in [raw, other] {
        DispatchQueue.global().async(group: group) {
          if let changed = try? mailbox.setHold(true) { answers.withLock { $0.append(changed) } }
        }
      }
      group.wait()
      #expect(answers.withLock { $0 }.map { $0 ? 1 : 0 }.sorted() == [0, 1])
      #expect(try raw.setHold(false))
    }
  }

  @Test func `Hold and resume print what changed and status shows the hold in text and JSON`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let raw = try container.rawMailbox()
    try raw.enqueue(Data("1".utf8))
    let first = try Mailboxctl.run(["hold"] + location)
    #expect(first.status == 0)
    #expect(first.stdout == "jobs: held\n")
    #expect(try Mailboxctl.run(["hold"] + location).stdout == "jobs: already held\n")
    #expect(raw.isHeld)
    let text = try Mailboxctl.run(["status"] + location)
    #expect(text.stdout.hasSuffix("\nheld:             yes\n"))
    let json = try jsonLines(try Mailboxctl.run(["status"] + location + ["--json"]).stdout)
    #expect(json.first?["held"] as? Bool == true)
    // A drain without --follow finds nothing to claim; producers go on.
    let drained = try Mailboxctl.run(["drain"] + location)
    #expect(drained.status == 0)
    #expect(drained.stdout == "")
    #expect(
      drained.stderr.hasPrefix(
        "mailboxctl: drain: the mailbox is held: nothing is claimed until 'mailboxctl resume'\n"),
      "\(drained.stderr)")
    let claimed = try Mailboxctl.run(["claim"] + location)
    #expect(claimed.status == 0)
    #expect(claimed.stdout == "")
    #expect(
      claimed.stderr
        == "mailboxctl: claim: the mailbox is held: nothing is claimed until 'mailboxctl resume'\n")
    #expect(try Mailboxctl.run(["enqueue"] + location + ["--data", "2"]).status == 0)
    #expect(try raw.inspector.status().pending == 2)
    let resumed = try Mailboxctl.run(["resume"] + location)
    #expect(resumed.stdout == "jobs: resumed\n")
    #expect(try Mailboxctl.run(["resume"] + location).stdout == "jobs: not held\n")
    #expect(try Mailboxctl.run(["status"] + location).stdout.hasSuffix("\nheld:             no\n"))
    let after = try jsonLines(try Mailboxctl.run(["status"] + location + ["--json"]).stdout)
    #expect(after.first?["held"] as? Bool == false)
    let delivered = try Mailboxctl.run(["drain"] + location)
    #expect(try jsonLines(delivered.stdout).map { $0["message"] as? Int } == [1, 2])
  }

  /// Found by an adversarial review: a plain drain that a hold stopped midway exited 0 with its
  /// counts alone, as if the mailbox were empty, messages still pending.
  @Test func `A drain a hold stops midway says the mailbox is held`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let raw = try container.rawMailbox()
    for number in 1...3 { try raw.enqueue(Data("\(number)".utf8)) }
    // The first message's handler holds the mailbox: the drain claims nothing more.
    let hold = ([Mailboxctl.url.path, "hold"] + location).joined(separator: " ")
    let drained = try Mailboxctl.run(
      ["drain"] + location + ["--exec", "/bin/sh", "-c", "cat >/dev/null; \(hold) >/dev/null"])
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(drained.stderr.hasPrefix("mailboxctl: drain: delivered 1, released 0, quarantined 0"))
    #expect(
      drained.stderr.hasSuffix("; the mailbox is held until 'mailboxctl resume'\n"),
      "\(drained.stderr)")
    #expect(try raw.inspector.status().pending == 2)
  }

  @Test func `Hold of a missing mailbox exits 66 and creates nothing`() throws {
    let container = try TemporaryContainer()
    let result = try Mailboxctl.run(["hold"] + container.arguments())
    #expect(result.status == 66)
    #expect(
      result.stderr
        == "mailboxctl: error: hold: no such mailbox: \(container.url.path)/AppGroupMailbox/jobs "
        + "('mailboxctl namespaces --container \(container.url.path)' lists the mailboxes there; "
        + "'mailboxctl create' makes one)\n")
  }

  /// Done-when of issue 17: a `drain --follow` in another process stops claiming within 500 ms
  /// of `hold` (`AGM_WAKE_DEADLINE_MS` widens it) while a producer keeps enqueueing, and
  /// delivers everything, once and in order, after `resume`.
  @Test func `A follow drain in another process stops claiming within 500 ms of hold and resumes`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxMessages: 100_000))
    let drain = try Mailboxctl.start(["drain"] + container.arguments() + ["--follow"])
    defer {
      drain.signal(SIGKILL)
      _ = try? drain.finish()
    }
    let produced = Locked<[Int64]>([])
    let stop = Locked(false)
    // The producer: one message every 2 ms, its payload the time it was enqueued (µs).
    let producer = Thread {
      while !stop.withLock({ $0 }) {
        let micros = WatchSupport.nowMicros()
        guard (try? raw.enqueue(Data(String(micros).utf8))) != nil else { break }
        produced.withLock { $0.append(micros) }
        usleep(2_000)
      }
    }
    producer.start()
    defer { stop.withLock { $0 = true } }
    #expect(waitUntil(deadline: 30) { messages(drain.stdout).count >= 20 })
    let hold = try Mailboxctl.run(["hold"] + container.arguments())
    #expect(hold.status == 0)
    let heldAt = WatchSupport.nowMicros()
    let window = WatchSupport.wakeDeadlineMicros
    // The producer goes on well past the window; the drain must not take those messages.
    #expect(
      waitUntil(deadline: 60) {
        (produced.withLock { $0.last } ?? 0) > heldAt + window + 500_000
      })
    stop.withLock { $0 = true }
    #expect(waitUntil(deadline: 30) { producer.isFinished })
    let all = produced.withLock { $0 }
    // Everything the drain printed plus everything pending is everything produced (its reader
    // thread may lag behind the pipe for a moment: waited for), and nothing is claimed.
    #expect(
      waitUntil(deadline: 30) {
        (try? raw.inspector.status().pending) == all.count - messages(drain.stdout).count
      })
    #expect(try raw.inspector.status().claimed == 0)
    let beforeResume = messages(drain.stdout)
    let lateClaims = beforeResume.filter { $0 > heldAt + window }
    #expect(lateClaims == [])
    #expect(all.filter { $0 > heldAt + window }.count >= 10)
    #expect(drain.process.isRunning)
    let resume = try Mailboxctl.run(["resume"] + container.arguments())
    #expect(resume.status == 0)
    let resumedAt = WatchSupport.nowMicros()
    #expect(
      waitUntil(deadline: Double(window) / 1_000_000) {
        messages(drain.stdout).count > beforeResume.count
      })
    #expect(WatchSupport.nowMicros() - resumedAt <= window)
    #expect(waitUntil(deadline: 60) { messages(drain.stdout).count >= all.count })
    #expect(messages(drain.stdout) == all)
  }
}
