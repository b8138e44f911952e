import AppGroupMailbox
import Foundation

/// A typed message for the mailboxctl interoperability tests.
struct Job: Codable, Sendable, Equatable {
  var number: Int
  var text: String
}

/// One entry of the Debian package database, for the real-data test.
struct PackageEntry: Codable, Sendable {
  var index: Int
  var text: String
}

/// Commands the mailboxctl tests use:
/// `typed-produce CONTAINER NS FIRST COUNT`: enqueues `Job`s FIRST..<FIRST+COUNT, text "job N é".
/// `typed-consume CONTAINER NS`: claims `Job`s until empty, prints each as JSON, acknowledges.
/// `dpkg-produce CONTAINER NS FILE SLICE SLICES`: splits FILE at blank lines and enqueues every
/// entry whose index modulo SLICES is SLICE as a `PackageEntry`.
let cliCommands: [WorkerCommand] = [
  WorkerCommand(name: "typed-produce") { args in
    let mailbox = try AppGroupMailbox<Job>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: 1_000_000))
    let first = Int(args[2])!
    for number in first..<(first + Int(args[3])!) {
      try mailbox.enqueue(Job(number: number, text: "job \(number) é"))
    }
  },
  WorkerCommand(name: "typed-consume") { args in
    let mailbox = try AppGroupMailbox<Job>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: 1_000_000))
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    while let claim = try mailbox.claimPending(limit: 1).first {
      print(String(decoding: try encoder.encode(claim.message), as: UTF8.self))
      try claim.acknowledge()
    }
  },
  WorkerCommand(name: "dpkg-produce") { args in
    let mailbox = try AppGroupMailbox<PackageEntry>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxMessages: 1_000_000, maxPayloadBytes: 1_048_576))
    let slice = Int(args[3])!
    let slices = Int(args[4])!
    let entries = packageEntries(try Data(contentsOf: URL(fileURLWithPath: args[2])))
    for (index, text) in entries.enumerated() where index % slices == slice {
      try mailbox.enqueue(PackageEntry(index: index, text: text))
    }
  },
]

/// The entries of a dpkg status file: the text between blank lines, without empty ones.
func packageEntries(_ data: Data) -> [String] {
  String(decoding: data, as: UTF8.self).components(separatedBy: "\n\n")
    .filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
}
