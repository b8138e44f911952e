import CMailboxShims
import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A message whose line never reached its reader (a full disk, a closed pipe, a line cut short)
/// is put back without counting the delivery, by every command that prints messages: `drain` to
/// stdout or `--output`, and `claim`. So `--max-delivery-attempts` never makes a dead letter of
/// a message nobody received.
@Suite struct CLIUndeliveredTests {
  /// The delivery counts of what is pending in namespace `jobs`, oldest first.
  func pendingCounts(_ container: TemporaryContainer) throws -> [Int] {
    try container.rawMailbox().inspector.entries(in: [.pending]).map { $0.deliveryCount ?? -1 }
  }

  func devFull() throws -> FileHandle {
    try #require(FileHandle(forWritingAtPath: "/dev/full"))
  }

  @Test func `Two drains to a full stdout never make a dead letter of the message`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    let created = try Mailboxctl.run(["create"] + location + ["--max-delivery-attempts", "2"])
    #expect(created.status == 0, "\(created.stderr)")
    #expect(try Mailboxctl.run(["enqueue"] + location + ["--data", #"{"x":1}"#]).status == 0)
    for _ in 0..<2 {
      let failed = try Mailboxctl.run(["drain"] + location, stdout: try devFull())
      #expect(failed.status == 74)
      #expect(try pendingCounts(container) == [0])
    }
    let drained = try Mailboxctl.run(["drain"] + location)
    #expect(drained.status == 0, "\(drained.stderr)")
    #expect(!drained.stderr.contains("dead letter"))
    let lines = try jsonLines(drained.stdout)
    #expect(lines.map { $0["deliveryCount"] as? Int } == [1])
    #expect(container.names("quarantine").isEmpty)
  }

  @Test(mountsTmpfs)
  func `drain --output to a full file system puts the batch back uncounted`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 3)
    let mount = container.url.appendingPathComponent("full").path
    try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
    try mountTmpfs(mount, size: "64k")
    defer { unmount(mount) }
    // Fill it: writes until ENOSPC.
    let filler = open(mount + "/filler", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    try #require(filler >= 0)
    let block = [UInt8](repeating: 0x78, count: 4096)
    while write(filler, block, block.count) > 0 {}
    close(filler)
    let output = mount + "/out.jsonl"
    let result = try Mailboxctl.run(["drain"] + container.arguments() + ["--output", output])
    #expect(result.status == 74)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: writing \(output) failed: No space left on device (errno 28); "
          + "the batch was put back, its delivery not counted (any of its lines already in the "
          + "file will be there twice, and one cut short stays as a line that is not JSON)\n"),
      "\(result.stderr)")
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [0, 0, 0])
  }

  @Test func `A line cut short by a reader that went away is not a delivery`() throws {
    // The line (about 40 KiB) is larger than the pipe (4 KiB): drain's write blocks part way,
    // the reader takes some bytes and closes, and the rest of the write fails with EPIPE.
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let id = try mailbox.enqueue(Data(("\"" + String(repeating: "a", count: 40_000) + "\"").utf8))
      .id
    var fds: [Int32] = [-1, -1]
    // Close-on-exec: the read end must not reach drain, or the pipe would keep a reader.
    try #require(cmailbox_pipe_cloexec(&fds) == 0)
    for fd in fds { #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) }
    let readEnd = fds[0]
    let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ (fcntl(2)), not exported by Glibc
    #expect(fcntl(fds[1], setPipeSize, 4096) >= 4096)
    let reader = Thread {
      var byte: UInt8 = 0
      _ = read(readEnd, &byte, 1)
      close(readEnd)
    }
    reader.start()
    let result = try Mailboxctl.run(
      ["drain"] + container.arguments(),
      stdout: FileHandle(fileDescriptor: fds[1], closeOnDealloc: true))
    #expect(result.status == 74)
    #expect(
      result.stderr.hasSuffix(
        "mailboxctl: error: drain: stdout was closed by its reader (EPIPE): stopped claiming; "
          + "the messages not written were put back, their delivery not counted\n"))
    let pending = try mailbox.inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == [id])
    #expect(pending.map(\.deliveryCount) == [0])
  }

  @Test func `claim to a full stdout puts every message back uncounted`() throws {
    let container = try TemporaryContainer()
    let ids = try container.enqueueNumbered(count: 5)
    let result = try Mailboxctl.run(
      ["claim"] + container.arguments() + ["--limit", "5"], stdout: try devFull())
    #expect(result.status == 74)
    #expect(
      result.stderr
        == "mailboxctl: error: claim: writing stdout failed: No space left on device (errno 28); "
        + "5 of 5 claimed messages not printed, put back, their delivery not counted\n")
    #expect(container.names("claimed").isEmpty)
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [0, 0, 0, 0, 0])
  }

  @Test func `claim to a closed pipe puts the messages back uncounted`() throws {
    let container = try TemporaryContainer()
    try container.enqueueNumbered(count: 2)
    let result = try Mailboxctl.runWithoutReader(
      ["claim"] + container.arguments() + ["--limit", "2", "--json"])
    #expect(result.status == 74)
    #expect(try pendingCounts(container) == [0, 0])
  }

  @Test func `A --coprocess handler that closed its stdin never counts a delivery`() throws {
    // The handler closes its stdin before it answers the greeting, so every line drain sends
    // fails with EPIPE: the message never reaches it, five times, and drain gives up with 69.
    let container = try TemporaryContainer()
    let location = container.arguments()
    let created = try Mailboxctl.run(["create"] + location + ["--max-delivery-attempts", "2"])
    #expect(created.status == 0, "\(created.stderr)")
    let ids = try container.enqueueNumbered(count: 2)
    let arguments = try PythonHandler.write(
      """
      sys.stdin.readline()
      os.close(0)
      answer = {"protocol": mailbox_handler.PROTOCOL, "version": mailbox_handler.VERSION,
                "capabilities": mailbox_handler.CAPABILITIES}
      sys.stdout.write(json.dumps(answer) + "\\n")
      sys.stdout.flush()
      import signal
      signal.pause()

      """, in: container)
    let result = try Mailboxctl.run(
      ["drain"] + location + ["--jobs", "2"] + arguments, deadline: 60)
    #expect(result.status == 69, "\(result.stderr)")
    #expect(result.stderr.contains("closed its input"), "\(result.stderr)")
    #expect(container.names("quarantine").isEmpty)
    let pending = try container.rawMailbox().inspector.entries(in: [.pending])
    #expect(pending.map(\.id) == ids)
    #expect(pending.map(\.deliveryCount) == [0, 0])
  }

  @Test(.enabled(if: isRoot || isCI, "chattr +i needs root (CAP_LINUX_IMMUTABLE)"))
  func `A failed handler whose retry delay delayed/ cannot take is put back at once`() throws {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["enqueue"] + location + ["--data", "1"]).status == 0)
    // delayed/ refuses every new entry, even root's (chattr(1): immutable), as a full disk does.
    let delayed = container.area("delayed").path
    let locked = try Processes.run("/usr/bin/chattr", ["+i", delayed])
    try #require(locked.status == 0, "chattr +i failed: \(locked.stderr)")
    defer { _ = try? Processes.run("/usr/bin/chattr", ["-i", delayed]) }
    let failed = try Mailboxctl.run(
      ["drain"] + location + ["--exec", "false", "--retry-delay", "60"])
    #expect(failed.status == 74, "\(failed.stderr)")
    #expect(failed.stderr.contains("release: renameat2"), "\(failed.stderr)")
    #expect(container.names("claimed") == [])
    #expect(try pendingCounts(container) == [1])
  }
}
