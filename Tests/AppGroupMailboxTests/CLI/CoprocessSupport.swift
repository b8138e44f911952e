import Foundation
import Testing

@testable import AppGroupMailbox
@testable import mailboxctl

/// Python handlers for `drain --coprocess` tests, built on the repository's
/// python/mailbox_handler.py.
enum PythonHandler {
  /// The repository's python/ directory.
  static var libraryDirectory: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("python")
  }

  /// Writes a handler script `body` (after an import of `mailbox_handler`, `os`, `sys` and
  /// `json`) into `container`; returns the `--coprocess` arguments that run it.
  static func write(_ body: String, in container: TemporaryContainer, name: String = "handler")
    throws -> [String]
  {
    let script = container.url.appendingPathComponent("\(name).py")
    let header =
      "import json, os, sys\nsys.path.insert(0, \(JSONText.string(libraryDirectory.path)))\n"
      + "import mailbox_handler\n"
    try Data((header + body).utf8).write(to: script)
    return ["--coprocess", "/usr/bin/python3", script.path]
  }

  /// A handler function body that appends `<pid> <id>` to `log` (flushed, and fsynced with
  /// `sync`) before it returns: every handling is on record before drain may acknowledge it.
  static func logging(to log: URL, crashEvery: Int? = nil, sync: Bool = true) -> String {
    """
    count = 0
    log = open(\(JSONText.string(log.path)), "a")
    def handle(message):
        global count
        count += 1
        if \(crashEvery.map(String.init) ?? "0") and count % \(crashEvery ?? 1) == 0:
            os._exit(3)
        log.write(f"{os.getpid()} {message.id}\\n")
        log.flush()
        if \(sync ? "True" : "False"):
            os.fsync(log.fileno())
    mailbox_handler.run(handle)

    """
  }

  /// Writes a handler script that imports `modules`, answers drain's greeting by hand (without
  /// mailbox_handler), then runs `body`; returns the `--coprocess` arguments that run it.
  static func greeted(
    _ body: String, importing modules: String = "json, sys", in container: TemporaryContainer
  )
    throws -> [String]
  {
    let script = container.url.appendingPathComponent("handler.py")
    let header = """
      import \(modules)
      sys.stdin.readline()
      sys.stdout.write(json.dumps({"protocol": "mailboxctl-handler", "version": 1}) + "\\n")
      sys.stdout.flush()

      """
    try Data((header + body).utf8).write(to: script)
    return ["--coprocess", "/usr/bin/python3", script.path]
  }

  /// The handled records of `log`: (pid, id) in order.
  static func records(_ log: URL) throws -> [(pid: Int32, id: String)] {
    guard FileManager.default.fileExists(atPath: log.path) else { return [] }
    return try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap {
      let parts = $0.split(separator: " ")
      guard parts.count == 2, let pid = Int32(parts[0]) else { return nil }
      return (pid, String(parts[1]))
    }
  }
}

/// The summary line of a drain's stderr without its timing (`mailboxctl: drain: delivered ...,
/// released ..., quarantined ...`).
func drainSummary(_ stderr: String) -> String? {
  stderr.split(separator: "\n").last { $0.hasPrefix("mailboxctl: drain: delivered") }
    .map { String($0.split(separator: " in ").first!) }
}

extension TemporaryContainer {
  /// Enqueues `{"n": 0}` ... `{"n": count - 1}` in namespace `jobs`; returns their ids.
  @discardableResult
  func enqueueNumbered(count: Int) throws -> [UUID] {
    let mailbox = try rawMailbox(limits: .init(maxMessages: 10_000))
    return try (0..<count).map { try mailbox.enqueue(Data("{\"n\":\($0)}".utf8)).id }
  }

  /// The messages left pending, claimed or delayed in namespace `jobs`.
  func remaining() throws -> [AppGroupMailboxEntry] {
    try rawMailbox().inspector.entries(in: [.pending, .claimed, .delayed])
  }
}
