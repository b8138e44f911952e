import AppGroupMailbox
import Foundation

/// The options of a keyed enqueue (`enqueue --key K --on-conflict keep|replace`).
enum EnqueueKey {
  static let options: [OptionSpec] = [
    .value("--key", "KEY", "At most one pending message with KEY (see --on-conflict)."),
    .value(
      "--on-conflict", "keep|replace",
      "With --key, when one is pending: keep it, or replace it (default)."),
  ]

  static let details = """
    --key KEY (1 to 128 bytes of A-Z a-z 0-9 . _ - :, not starting with .) keeps at most one
    pending message with KEY, across processes: with --on-conflict replace (the default) the new
    message takes the pending one's place atomically (its id, position in line, lifetime and
    delivery count and priority level; the id printed is that message's), with keep the pending
    one stays and nothing is written (a note says so). A claimed message with KEY is not
    touched: the new one is enqueued and waits behind it; once the claimed one comes back
    (released, recovered, due after a delay) KEY has two pending messages, the older first,
    until a claim takes one. --key takes one message and no --id,
    --enqueued-at, --delay or --not-before. With --json a keyed enqueue adds "keyOutcome":
    "enqueued", "kept" or "replaced".
    """

  /// The key and policy the arguments give, or nil without --key.
  /// - Throws: ``CommandFailure`` (usage) for a policy other than keep or replace, or
  ///   --on-conflict, --id, --enqueued-at, --delay or --not-before beside or without --key.
  static func request(_ arguments: ParsedArguments) throws -> (String, AppGroupMailboxKeyPolicy)? {
    guard let key = arguments.value("--key") else {
      if arguments.value("--on-conflict") != nil {
        throw CommandFailure(.usage, "--on-conflict applies only with --key")
      }
      return nil
    }
    let text = arguments.value("--on-conflict") ?? "replace"
    guard let policy = AppGroupMailboxKeyPolicy(rawValue: text) else {
      throw CommandFailure(.usage, "--on-conflict needs keep or replace, not '\(text)'")
    }
    for option in ["--id", "--enqueued-at", "--delay", "--not-before"]
    where arguments.value(option) != nil {
      throw CommandFailure(.usage, "--key cannot be combined with \(option)")
    }
    return (key, policy)
  }

  /// The usage error (exit 64) for a key the library refuses by its rule.
  static func refusal(_ key: String) -> CommandFailure {
    CommandFailure(
      .usage,
      "--key needs 1 to 128 bytes of A-Z a-z 0-9 . _ - :, not starting with '.', not "
        + "'\(key)'; nothing was enqueued")
  }

  /// Enqueues `payload` under `key`, waiting up to `wait` seconds for room; prints the id of
  /// the message pending with the key (with `json`, an object with its outcome).
  static func run(
    _ mailbox: AppGroupRawMailbox, _ payload: Data, key: String,
    policy: AppGroupMailboxKeyPolicy, type: String, payloadVersion: Int, priority: Int,
    wait: Double, json: Bool
  ) throws {
    let outcome: AppGroupMailboxKeyedOutcome
    do {
      outcome = try mailbox.waitingForRoom(upTo: wait) {
        try mailbox.enqueue(
          payload, key: key, onConflict: policy, messageType: type,
          payloadVersion: payloadVersion, priority: priority)
      }
    } catch AppGroupMailboxError.invalidLimit(let name) where name.hasPrefix("key") {
      throw refusal(key)
    }
    let id = outcome.id.uuidString.lowercased()
    let name: String
    switch outcome {
    case .enqueued: name = "enqueued"
    case .kept: name = "kept"
    case .replaced: name = "replaced"
    }
    if json {
      var object = JSONObject()
      object.add("id", id)
      object.add("duplicate", outcome == .kept(outcome.id))
      object.add("notBefore", date: nil)
      object.add("keyOutcome", name)
      try Output.data(object.text + "\n")
    } else {
      try Output.data(id + "\n")
      if case .kept = outcome {
        Output.note("enqueue: message \(id) with key \(key) is pending; nothing was written")
      }
    }
  }
}
