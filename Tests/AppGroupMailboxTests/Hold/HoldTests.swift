import Foundation
import Glibc
import MailboxLocks
import Testing

@testable import AppGroupMailbox

/// Issue 17, item 1: `pause()` and `resume()` hold and resume delivery; the hold is stored in
/// the settings file (format 2 while held) and survives reopening.
@Suite struct HoldTests {
  func settingsText(_ container: TemporaryContainer) throws -> String {
    try String(
      contentsOfFile: container.url.path + "/AppGroupMailbox/jobs/settings", encoding: .utf8)
  }

  static let notHeldLine =
    "{\"format\":1,\"maxMessages\":100,\"maxPayloadBytes\":65536,\"largestPayloadBytes\":65536,"
    + "\"messageLifetime\":86400,\"maxQuarantinedFiles\":20,\"maxDeliveryAttempts\":null,"
    + "\"overflowPolicy\":\"rejectNewest\",\"sharing\":\"private\"}\n"
  static let heldLine =
    "{\"format\":2,\"maxMessages\":100,\"maxPayloadBytes\":65536,\"largestPayloadBytes\":65536,"
    + "\"messageLifetime\":86400,\"maxQuarantinedFiles\":20,\"maxDeliveryAttempts\":null,"
    + "\"overflowPolicy\":\"rejectNewest\",\"sharing\":\"private\",\"held\":true}\n"

  @Test func `While held claims return nothing, enqueues go on, and the hold survives reopening`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    for text in ["\"a\"", "\"b\"", "\"c\""] { try raw.enqueue(Data(text.utf8)) }
    #expect(!raw.isHeld)
    try raw.pause()
    #expect(raw.isHeld)
    #expect(try settingsText(container) == Self.heldLine)
    #expect(try raw.claimPending().isEmpty)
    try raw.enqueue(Data("\"d\"".utf8))
    #expect(try raw.inspector.status().pending == 4)
    #expect(try raw.inspector.status().claimed == 0)
    // Another opener (as after a restart), typed and raw, and a read-only inspector.
    let reopened = try container.rawMailbox()
    #expect(reopened.isHeld)
    #expect(reopened.settings.isHeld)
    #expect(try reopened.claimPending(limit: 10).isEmpty)
    let typed: AppGroupMailbox<String> = try container.mailbox()
    #expect(typed.isHeld)
    #expect(try typed.claimPending().isEmpty)
    #expect(try !typed.wait(timeout: 0.05))
    let inspector = try AppGroupMailboxInspector(containerURL: container.url, namespace: "jobs")
    #expect(inspector.isHeld)
    // Holding again changes nothing; resuming in the other opener is seen by the first.
    try typed.pause()
    #expect(try settingsText(container) == Self.heldLine)
    try reopened.resume()
    #expect(!raw.isHeld)
    #expect(!typed.isHeld)
    #expect(!inspector.isHeld)
    #expect(try settingsText(container) == Self.notHeldLine)
    let claims = try raw.claimPending()
    #expect(
      claims.map { String(decoding: $0.payload, as: UTF8.self) } == [
        "\"a\"", "\"b\"", "\"c\"", "\"d\"",
      ])
    try typed.resume()
    #expect(try settingsText(container) == Self.notHeldLine)
  }

  @Test func `A hold keeps the other settings, and config keeps the hold`() throws {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox(limits: .init(maxMessages: 7))
    try raw.pause()
    let updated = try raw.updateSettings { $0.maxDeliveryAttempts = 3 }
    #expect(updated.isHeld)
    #expect(updated.maxMessages == 7)
    #expect(updated.maxDeliveryAttempts == 3)
    #expect(try settingsText(container).hasPrefix("{\"format\":2,\"maxMessages\":7,"))
    #expect(try settingsText(container).hasSuffix(",\"held\":true}\n"))
    #expect(
      updated.differences(from: AppGroupMailboxSettings()) == [
        "maxMessages", "maxDeliveryAttempts", "held",
      ])
  }

  @Test func `Format 2 is read with its held member, which it must have`() throws {
    let held = try SettingsText.decode(Array(Self.heldLine.utf8)).settings
    #expect(held.isHeld)
    let notHeld = try SettingsText.decode(
      Array(Self.heldLine.replacingOccurrences(of: "true", with: "false").utf8)
    ).settings
    #expect(!notHeld.isHeld)
    #expect(try !SettingsText.decode(Array(Self.notHeldLine.utf8)).settings.isHeld)
    // Without `held`, or with a number for it, format 2 is unreadable (refused, not guessed).
    for member in ["", ",\"held\":1"] {
      let text = Self.heldLine.replacingOccurrences(of: ",\"held\":true", with: member)
      #expect(
        throws: SettingsText.Failure.unreadable("'held' is missing or not true or false (format 2)")
      ) {
        _ = try SettingsText.decode(Array(text.utf8))
      }
    }
    #expect(SettingsText.encode(held) == Data(Self.heldLine.utf8))
    #expect(SettingsText.encode(notHeld) == Data(Self.notHeldLine.utf8))
  }

  @Test func `A held typed drain waits and delivers after resume from another opener`() async throws
  {
    let container = try TemporaryContainer()
    let producer: AppGroupMailbox<String> = try container.mailbox()
    try producer.pause()
    try producer.enqueue("x")
    let consumer: AppGroupMailbox<String> = try container.mailbox()
    var drainedPending: [String] = []
    try await consumer.drainPending { drainedPending.append($0.message) }
    #expect(drainedPending.isEmpty)
    let received = HeldDrainLog()
    let drain = Task {
      // Polling once an hour: only the wake-up of the settings change can deliver in time.
      try await consumer.drain(pollingInterval: 3_600) { claim in
        received.append(claim.message)
      }
    }
    defer { drain.cancel() }
    #expect(try await offCooperativePool { !waitUntil(deadline: 0.2) { !received.all.isEmpty } })
    try producer.resume()
    // A generous bound (beside long synchronous tests under a sanitizer the cooperative pool
    // that runs the drain can be held for minutes); a missed wake-up waits an hour and fails.
    #expect(try await offCooperativePool { waitUntil(deadline: 900) { received.all == ["x"] } })
  }
}

/// Messages a drain handler received, readable from the test.
final class HeldDrainLog: Sendable {
  private let values = Locked<[String]>([])
  func append(_ value: String) { values.withLock { $0.append(value) } }
  var all: [String] { values.withLock { $0 } }
}

/// The second implementation (interop/python, written from docs/FORMAT.md) honours a hold the
/// library stored, in another process.
@Suite(.enabled(if: PythonSpool.available, "needs python3 (scripts/test installs it)"))
struct PythonHoldTests {
  @Test func `A Python consumer claims nothing from a held mailbox and everything after resume`()
    throws
  {
    let container = try TemporaryContainer()
    let raw = try container.rawMailbox()
    try raw.enqueue(Data("\"a\"".utf8))
    try raw.enqueue(Data("\"b\"".utf8))
    try raw.pause()
    #expect(try PythonSpool.delivered(PythonSpool.run("drain", container)) == [])
    #expect(try raw.inspector.status().pending == 2)
    try raw.resume()
    let drained = try PythonSpool.delivered(PythonSpool.run("drain", container))
    #expect(drained.map(\.payload) == ["\"a\"", "\"b\""])
  }
}
