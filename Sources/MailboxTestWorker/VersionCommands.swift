import AppGroupMailbox
import Foundation

/// Payload version 1 of the payload-version tests' job: what an older build's `Job` encodes.
struct VersionOneJob: Codable, Sendable {
  var number: Int
}

/// Payload version 2 of the same job: `number` kept, `label` added. Its encoded form also
/// decodes as ``VersionOneJob``, which is why a version-1 consumer must never decode it.
struct VersionTwoJob: Codable, Sendable, AppGroupMailboxVersionedMessage {
  static let payloadVersion = 2
  var number: Int
  var label: String
}

/// Commands of the payload-version tests (both types use the message type tag `Job`):
/// `version-consume CONTAINER NS 1|2`: claims with the version-1 or version-2 type until a claim
/// returns nothing, prints `<version> <number>[ <label>]` per message and acknowledges it, then
/// prints `claimed <count>`.
let versionCommands: [WorkerCommand] = [
  WorkerCommand(name: "version-consume") { args in
    let container = URL(fileURLWithPath: args[0])
    let count =
      args[2] == "2"
      ? try consumeAll(
        AppGroupMailbox<VersionTwoJob>(
          containerURL: container, namespace: args[1], messageType: "Job")
      ) { "\($0.number) \($0.label)" }
      : try consumeAll(
        AppGroupMailbox<VersionOneJob>(
          containerURL: container, namespace: args[1], messageType: "Job")
      ) { "\($0.number)" }
    emitLine("claimed \(count)")
  }
]

/// Claims one message at a time until a claim returns nothing, printing
/// `<payload version> <describe(message)>` and acknowledging each; returns how many it took.
private func consumeAll<Message>(
  _ mailbox: AppGroupMailbox<Message>, _ describe: (Message) -> String
) throws -> Int {
  var count = 0
  while let claim = try mailbox.claimPending(limit: 1).first {
    emitLine("\(mailbox.payloadVersion) \(describe(claim.message))")
    try claim.acknowledge()
    count += 1
  }
  return count
}
