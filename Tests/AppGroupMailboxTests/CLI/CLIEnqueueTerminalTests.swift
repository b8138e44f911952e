import AppGroupMailbox
import Foundation
import Glibc
import Testing

/// `enqueue` reading a message typed at a terminal (found by a new user's run): it waited
/// without a word, and looked hung.
@Suite struct CLIEnqueueTerminalTests {
  @Test func `Enqueue from a terminal says how to end the input`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    // A pseudo-terminal (pty(7)): Glibc's posix_openpt and ptsname are not imported in Swift,
    // so /dev/ptmx with its two ioctls, TIOCSPTLCK and TIOCGPTN (asm-generic/ioctls.h).
    let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    try #require(master >= 0, "open /dev/ptmx: errno \(errno)")
    defer { close(master) }
    var unlock: Int32 = 0
    var number: UInt32 = 0
    try #require(ioctl(master, UInt(0x4004_5431), &unlock) == 0, "TIOCSPTLCK: errno \(errno)")
    try #require(ioctl(master, UInt(0x8004_5430), &number) == 0, "TIOCGPTN: errno \(errno)")
    let name = "/dev/pts/\(number)"
    let terminal = try #require(FileHandle(forUpdatingAtPath: name))
    defer { try? terminal.close() }
    let (process, out, err) = Processes.prepare(
      Mailboxctl.url, ["enqueue"] + container.arguments(), environment: [:])
    process.standardInput = terminal
    try process.run()
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    // A line, then Ctrl-D (VEOF) on a line of its own: the end of the input.
    let typed: [UInt8] = Array("{\"n\":1}\n".utf8) + [4]
    #expect(typed.withUnsafeBytes { write(master, $0.baseAddress, $0.count) } == typed.count)
    let ended = waitUntil(deadline: 60) { !process.isRunning }
    if !ended { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    #expect(ended)
    let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0, "\(stderr)")
    #expect(
      stderr
        == "mailboxctl: enqueue: reading the message from the terminal; end with Ctrl-D on a "
        + "line of its own (--data gives one on the command line)\n")
    let id = try #require(UUID(uuidString: stdout.trimmingCharacters(in: .newlines)))
    let entries = try mailbox.inspector.entries(in: [.pending])
    #expect(entries.map(\.id) == [id])
  }
}
