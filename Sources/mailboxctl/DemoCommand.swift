import AppGroupMailbox
import Foundation
import Glibc

/// `mailboxctl demo`: fills a fresh mailbox from several producer processes while draining it,
/// then checks and prints what happened. The README's first command.
let demoCommand = Subcommand(
  spec: CommandSpec(
    name: "demo",
    summary: "Fill a fresh mailbox from several producer processes, drain it, print a summary.",
    options: [
      .value("--producers", "N", "Producer processes (default 4)."),
      .value("--messages", "N", "Messages per producer (default 250)."),
      .flag("--keep", "Keep the temporary mailbox directory."),
      MailboxOptions.json,
    ],
    details: """
      Creates a mailbox in a new directory under $TMPDIR (or /tmp), starts the producers (this
      program again, as hidden subcommand __demo-produce), claims and acknowledges everything
      while they run, and checks that every message arrived exactly once and each producer's
      messages in order. Exit status 70 if a check fails. JSON: {"producers", "enqueued",
      "delivered", "distinct", "duplicates", "outOfOrder", "seconds", "passed"}, and with
      --keep "container" (the kept directory; the mailbox is its namespace "demo"). Without
      --json, --keep ends with the `status` command that looks at it.
      """),
  run: { arguments in try runDemo(arguments) })

/// The hidden producer the demo starts: `__demo-produce --container DIR --producer P --count N`.
let demoProduceCommand = Subcommand(
  spec: CommandSpec(
    name: "__demo-produce", summary: "Demo producer (internal).",
    options: MailboxOptions.writing([
      .value("--producer", "P", "Producer number."),
      .value("--count", "N", "Messages to enqueue."),
    ]), hidden: true),
  run: { arguments in
    let producer = try arguments.integer("--producer", in: 0...1_000_000) ?? 0
    let count = try arguments.integer("--count", in: 0...10_000_000) ?? 0
    let (mailbox, _) = try MailboxOptions.open(arguments, mustExist: false)
    for sequence in 0..<count {
      let json =
        "{\"producer\":\(producer),\"sequence\":\(sequence),"
        + "\"text\":\"message \(sequence) from producer \(producer) (pid \(getpid()))\"}"
      do {
        try mailbox.enqueue(Data(json.utf8), messageType: "demo")
      } catch {
        throw CommandFailure(error, while: "")
      }
    }
    return .success
  })

private struct DemoMessage: Decodable {
  var producer: Int
  var sequence: Int
}

private func runDemo(_ arguments: ParsedArguments) throws -> ExitStatus {
  let producers = try arguments.integer("--producers", in: 1...64) ?? 4
  let perProducer = try arguments.integer("--messages", in: 1...100_000) ?? 250
  let base =
    ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
  var template = Array((base + "/mailboxctl-demo-XXXXXX").utf8CString)
  guard let made = mkdtemp(&template) else {
    throw CommandFailure(.ioError, "cannot create a directory in \(base)")
  }
  let directory = String(cString: made)
  defer {
    if !arguments.flag("--keep") { try? FileManager.default.removeItem(atPath: directory) }
  }
  let total = producers * perProducer
  let location = MailboxOptions.Location(
    container: URL(fileURLWithPath: directory), namespace: "demo")
  let mailbox: AppGroupRawMailbox
  do {
    // The producers open it with the settings stored here.
    mailbox = try AppGroupRawMailbox(
      containerURL: location.container, namespace: location.namespace,
      limits: AppGroupMailboxLimits(maxMessages: total + 10))
  } catch {
    throw MailboxOptions.openFailure(error, location)
  }
  let json = arguments.flag("--json")
  if !json {
    let removal =
      arguments.flag("--keep") ? "" : " (removed when the demo finishes; --keep keeps it)"
    try Output.data("mailboxctl demo: a fresh mailbox at \(location.directory.path)\(removal)\n")
  }
  let started = Date()
  var children: [Process] = []
  for producer in 0..<producers {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = [
      "__demo-produce", "--container", directory, "--namespace", "demo", "--producer",
      String(producer), "--count", String(perProducer),
    ]
    do {
      try process.run()
    } catch {
      throw CommandFailure(.osError, "cannot start a producer: \(error)")
    }
    children.append(process)
  }
  if !json {
    try Output.data(
      "started \(producers) producer processes, \(perProducer) messages each; draining as they run\n"
    )
  }
  var seen = Set<[Int]>()
  var duplicates = 0
  var outOfOrder = 0
  var lastSequence = [Int: Int]()
  let decoder = JSONDecoder()
  while true {
    let producing = children.contains { $0.isRunning }
    let claims: [AppGroupRawMailbox.Claim]
    do {
      claims = try mailbox.claimPending(limit: 64)
    } catch {
      throw CommandFailure(error, while: "")
    }
    for claim in claims {
      guard let message = try? decoder.decode(DemoMessage.self, from: claim.payload) else {
        throw CommandFailure(.software, "demo: a message did not decode")
      }
      if !seen.insert([message.producer, message.sequence]).inserted { duplicates += 1 }
      if let last = lastSequence[message.producer], message.sequence <= last { outOfOrder += 1 }
      lastSequence[message.producer] = message.sequence
      do {
        try claim.acknowledge()
      } catch {
        throw CommandFailure(error, while: "")
      }
    }
    if claims.isEmpty {
      if !producing { break }
      usleep(1_000)
    }
  }
  for child in children { child.waitUntilExit() }
  let seconds = Date().timeIntervalSince(started)
  let failedProducers = children.filter { $0.terminationStatus != 0 }.count
  let passed = seen.count == total && duplicates == 0 && outOfOrder == 0 && failedProducers == 0
  if json {
    var object = JSONObject()
    object.add("producers", producers)
    object.add("enqueued", total)
    object.add("delivered", seen.count + duplicates)
    object.add("distinct", seen.count)
    object.add("duplicates", duplicates)
    object.add("outOfOrder", outOfOrder)
    object.add("seconds", seconds: seconds)
    object.add("passed", passed)
    if arguments.flag("--keep") { object.add("container", directory) }
    try Output.data(object.text + "\n")
  } else {
    try Output.data(
      "drained \(seen.count + duplicates) messages in \(String(format: "%.2f", seconds)) s: "
        + "\(seen.count) of \(total) distinct, \(duplicates) duplicates, "
        + "\(outOfOrder) out of order\n"
        + "summary: delivered \(seen.count + duplicates), released 0, quarantined 0\n"
        + (passed ? "every message arrived exactly once, each producer's in order\n" : ""))
    if arguments.flag("--keep") {
      try Output.data(
        "kept: look with 'mailboxctl status --container \(directory) --namespace demo'\n")
    }
  }
  if !passed {
    throw CommandFailure(
      .software, "demo check failed (\(failedProducers) producers failed)")
  }
  return .success
}
