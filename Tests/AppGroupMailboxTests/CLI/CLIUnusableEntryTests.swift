import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// An area or `state` that is the wrong kind of entry is named with what it is: a FIFO in place
/// of `state` was reported as "fstat on the state file failed: Invalid argument" followed by
/// every possible cause, and a symlinked `settings` as a bare ELOOP (reviews of stop 33).
@Suite struct CLIUnusableEntryTests {
  /// `mailboxctl status`'s stderr on the namespace `jobs` of `container`.
  private func statusError(_ container: TemporaryContainer) throws -> (Int32, String) {
    let result = try Mailboxctl.run(["status"] + container.arguments())
    #expect(result.stdout == "")
    return (result.status, result.stderr)
  }

  @Test func `A FIFO, a directory or a second link as state is named as such`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    let state = namespace + "/state"
    let prefix = "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(state) is "
    try FileManager.default.moveItem(atPath: state, toPath: namespace + "/state.kept")
    #expect(mkfifo(state, 0o600) == 0)
    #expect(
      try statusError(container)
        == (
          69,
          prefix + "a FIFO, not a regular file with one link, which a mailbox refuses "
            + "(docs/SECURITY.md; the state file was refused: Invalid argument (errno 22))\n"
        ))
    try FileManager.default.removeItem(atPath: state)
    try FileManager.default.moveItem(atPath: namespace + "/state.kept", toPath: state)
    try FileManager.default.linkItem(atPath: state, toPath: namespace + "/state.second")
    #expect(
      try statusError(container)
        == (
          69,
          prefix + "a file with 2 links, not a regular file with one link, which a mailbox "
            + "refuses (docs/SECURITY.md; the state file was refused: Invalid argument "
            + "(errno 22))\n"
        ))
  }

  @Test func `A symbolic link as an area is named as such`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    try FileManager.default.moveItem(
      atPath: namespace + "/pending", toPath: container.url.path + "/elsewhere")
    try FileManager.default.createSymbolicLink(
      atPath: namespace + "/pending", withDestinationPath: container.url.path + "/elsewhere")
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(namespace)"
            + "/pending is a symbolic link, not a directory, which a mailbox refuses "
            + "(docs/SECURITY.md; openat on the pending area failed: Not a directory "
            + "(errno 20))\n"
        ))
  }

  @Test func `A symbolic link as settings gives the recovery hint`() throws {
    let container = try TemporaryContainer()
    let opened = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    try FileManager.default.moveItem(
      atPath: namespace + "/settings", toPath: namespace + "/settings.kept")
    try FileManager.default.createSymbolicLink(
      atPath: namespace + "/settings", withDestinationPath: "settings.kept")
    #expect(
      throws: AppGroupMailboxError.invalidLimit("settings: a symbolic link, not a regular file")
    ) {
      _ = try container.rawMailbox()
    }
    // Met after the open, by a change (`mailboxctl hold` and `config` map it to exit 69 with
    // the recovery hint, as at open).
    #expect(
      throws: AppGroupMailboxError.invalidLimit("settings: a symbolic link, not a regular file")
    ) {
      try opened.pause()
    }
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): its settings "
            + "file cannot be used: a symbolic link, not a regular file; to recover, move "
            + "\(namespace)/settings away (the mailbox then has the default settings, and no "
            + "hold; its messages stay readable) and set yours again with 'mailboxctl config' "
            + "(and 'hold')\n"
        ))
  }

  /// Binds a Unix socket at `path` (closed at once; the entry stays).
  private func bindSocket(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    } == 0
  }

  @Test func `A socket as state, a directory as state when writing, a FIFO as keys are named`()
    throws
  {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    let state = namespace + "/state"
    try FileManager.default.moveItem(atPath: state, toPath: namespace + "/state.kept")
    // open(2) refuses a socket (ENXIO) and, for writing, a directory (EISDIR) before the
    // type check: both were reported as bare errnos.
    #expect(bindSocket(state))
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(state) is a "
            + "socket, not a regular file with one link, which a mailbox refuses "
            + "(docs/SECURITY.md; openat on the state file failed: No such device or address "
            + "(errno 6))\n"
        ))
    try FileManager.default.removeItem(atPath: state)
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
    let enqueue = try Mailboxctl.run(["enqueue"] + container.arguments() + ["--data", "1"])
    #expect(enqueue.status == 69)
    #expect(
      enqueue.stderr
        == "mailboxctl: error: enqueue: cannot open the mailbox at \(namespace): \(state) is a "
        + "directory, not a regular file with one link, which a mailbox refuses "
        + "(docs/SECURITY.md; openat on the state file failed: Is a directory (errno 21))\n")
    try FileManager.default.removeItem(atPath: state)
    try FileManager.default.moveItem(atPath: namespace + "/state.kept", toPath: state)
    // keys/ is opened by the first keyed enqueue: as the other areas, refused with exit 69.
    #expect(mkfifo(namespace + "/keys", 0o600) == 0)
    let keyed = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--key", "k", "--data", "1"])
    #expect(keyed.status == 69, "\(keyed.stderr)")
    #expect(
      keyed.stderr
        == "mailboxctl: error: enqueue: cannot open the mailbox at \(namespace): \(namespace)"
        + "/keys is a FIFO, not a directory, which a mailbox refuses (docs/SECURITY.md; openat "
        + "on the keys area failed: Not a directory (errno 20))\n")
    #expect(container.names("tmp") == [])
    #expect(try mailbox.inspector.counts().depth == 0)
  }

  /// A bind mount of a directory of the same filesystem has the namespace's device: only its
  /// mount id tells it apart. Before, the mailbox opened and every enqueue then failed with an
  /// EXDEV rename from tmp/ (exit 74), naming nothing (adversarial review).
  @Test(.enabled(if: isRoot || isCI, "a bind mount needs root (under CI=true it must work)"))
  func `A bind mount of the same filesystem on an area is refused and named`() throws {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let namespace = container.url.path + "/AppGroupMailbox/jobs"
    let elsewhere = container.url.path + "/elsewhere"
    try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
    let mounted = try Processes.run("/bin/mount", ["--bind", elsewhere, namespace + "/pending"])
    try #require(mounted.status == 0, "mount --bind failed: \(mounted.stderr)")
    defer { unmount(namespace + "/pending") }
    let error = #expect(throws: AppGroupMailboxError.containerUnavailable) {
      _ = try container.rawMailbox()
    }
    #expect(
      error?.containerUnavailableCause
        == .init(
          operation: "open mailbox", systemCall: "", errno: EXDEV, role: "pending area"))
    #expect(
      try statusError(container)
        == (
          69,
          "mailboxctl: error: status: cannot open the mailbox at \(namespace): \(namespace)"
            + "/pending is on another mount or device than the namespace directory (a "
            + "filesystem, a bind mount or a btrfs subvolume), which a mailbox refuses "
            + "(docs/SECURITY.md; the pending area was refused: Invalid cross-device link "
            + "(errno 18))\n"
        ))
    // keys/, opened by the first keyed enqueue, is checked as the areas are at open: before,
    // every keyed enqueue failed with EXDEV (exit 74), naming nothing.
    unmount(namespace + "/pending")
    let keys = namespace + "/keys"
    try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: false)
    let bound = try Processes.run("/bin/mount", ["--bind", elsewhere, keys])
    try #require(bound.status == 0, "mount --bind failed: \(bound.stderr)")
    defer { unmount(keys) }
    let keyed = try Mailboxctl.run(
      ["enqueue"] + container.arguments() + ["--key", "k", "--data", "1"])
    #expect(keyed.status == 69)
    #expect(
      keyed.stderr
        == "mailboxctl: error: enqueue: cannot open the mailbox at \(namespace): \(keys) is on "
        + "another mount or device than the namespace directory (a filesystem, a bind mount or "
        + "a btrfs subvolume), which a mailbox refuses (docs/SECURITY.md; the keys area was "
        + "refused: Invalid cross-device link (errno 18))\n")
    #expect(try container.rawMailbox().inspector.counts().depth == 0)
    #expect(container.names("tmp") == [])
  }

  /// overlayfs gives a regular file the device of the layer it is on, not the overlay's: with
  /// the lower layer on another filesystem than the upper, `state` was refused as "on another
  /// mount" although every entry is on the one overlay mount (review of the mount check).
  @Test(.enabled(if: isRoot || isCI, "mounting needs root (under CI=true it must work)"))
  func `A mailbox on an overlay whose layers are on two filesystems opens`() throws {
    let container = try TemporaryContainer()
    let root = container.url.path
    let merged = try mountTwoFilesystemOverlay(in: root)
    defer { unmountOverlay(in: root) }
    let mailbox = try AppGroupRawMailbox(
      containerURL: URL(fileURLWithPath: merged), namespace: "jobs")
    try mailbox.enqueue(Data("1".utf8))
    #expect(try mailbox.claimPending().map(\.payload) == [Data("1".utf8)])
    let status = try Mailboxctl.run(["status", "--container", merged, "--namespace", "jobs"])
    #expect(status.status == 0, "\(status.stderr)")
  }
}
