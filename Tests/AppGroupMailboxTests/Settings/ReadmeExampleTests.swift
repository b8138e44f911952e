import AppGroupMailbox
import Foundation
import Testing

// The README's examples, as written there (README.md, "Example"): this file must
// compile, so the README's code does.

enum WidgetAction: Codable, Sendable {
  case refresh
  case selectItem(id: Int)
}

func handle(_ action: WidgetAction) throws {
  print("handling \(action)")
}

func readmeExample() throws {
  let mailbox = try AppGroupMailbox<WidgetAction>(
    appGroupIdentifier: "group.com.example.product",
    namespace: "widget-actions",
    limits: .init(maxMessages: 100, maxPayloadBytes: 65_536)
  )

  // Producer (any process):
  try mailbox.enqueue(.selectItem(id: 42))

  // Consumer (any process): oldest first, acknowledge what was handled.
  for claim in try mailbox.claimPending() {
    do {
      try handle(claim.message)  // your code
      try claim.acknowledge()
    } catch {
      try claim.release()  // back to its original place in line
    }
  }
}

func drainNow(_ mailbox: AppGroupMailbox<WidgetAction>) async throws -> Int {
  var handled = 0
  try await mailbox.drainPending { claim in
    try handle(claim.message)  // acknowledged when this returns, released when it throws
    handled += 1
  }
  return handled
}

func startConsumer(_ mailbox: AppGroupMailbox<WidgetAction>) -> Task<Void, any Error> {
  Task {
    try await mailbox.drain { claim in
      try handle(claim.message)
    }
  }
}

@MainActor final class WidgetModel {
  var lastAction: WidgetAction?

  func refresh(from mailbox: AppGroupMailbox<WidgetAction>) async throws {
    try await mailbox.drainPending { claim in lastAction = claim.message }
  }
}

@Suite struct ReadmeExampleTests {
  @Test func `The README's async examples run as written`() async throws {
    _ = readmeExample
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("agm-readme-\(UUID().uuidString.prefix(8))")
    defer { try? FileManager.default.removeItem(at: directory) }
    let mailbox = try AppGroupMailbox<WidgetAction>(
      containerURL: directory, namespace: "widget-actions")
    try mailbox.enqueue(.selectItem(id: 42))
    try mailbox.enqueue(.refresh)
    #expect(try await drainNow(mailbox) == 2)
    #expect(try mailbox.inspector.status().depth == 0)
    let follow = startConsumer(mailbox)
    try mailbox.enqueue(.refresh)
    #expect(await waitUntilAsync(deadline: 900) { (try? mailbox.inspector.status().depth) == 0 })
    follow.cancel()
    try await follow.value
    // A main-actor model drains into its own state.
    try mailbox.enqueue(.selectItem(id: 7))
    let model = WidgetModel()
    try await model.refresh(from: mailbox)
    let last = await model.lastAction
    guard case .selectItem(let id)? = last else {
      Issue.record("the main-actor drain handed out nothing")
      return
    }
    #expect(id == 7)
  }
}
