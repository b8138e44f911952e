import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A cause says which system call failed only when one did: the mount check of an area and the
/// type check of `state` refused what their calls returned, and were worded "statx on the
/// pending area failed" and "fstat on the state file failed" (review of stop 34). The entry a
/// cause is about is named by the library, for `mailboxctl` to look at (before, it kept its own
/// table of role strings to entry names).
@Suite struct IOFailureWordingTests {
  @Test func `Each form of a cause reads as what happened`() {
    typealias Cause = AppGroupMailboxError.IOFailure
    #expect(
      Cause(operation: "open mailbox", systemCall: "", errno: EXDEV, role: "pending area").failure
        == "the pending area was refused: Invalid cross-device link (errno 18)")
    #expect(
      Cause(operation: "enqueue", systemCall: "fsync", errno: EIO, role: "pending area").failure
        == "fsync on the pending area failed: Input/output error (errno 5)")
    #expect(
      Cause(operation: "enqueue", systemCall: "getrandom", errno: ENOSYS).failure
        == "getrandom failed: Function not implemented (errno 38)")
    #expect(
      Cause(operation: "find container root", systemCall: "", errno: ENOENT).failure
        == "No such file or directory (errno 2)")
    #expect(
      Cause(operation: "open mailbox", systemCall: "", errno: EXDEV, role: "keys area")
        .description
        == "open mailbox: the keys area was refused: Invalid cross-device link (errno 18)")
  }

  @Test func `The entry a cause names is the namespace entry of its role`() throws {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    _ = try mailbox.enqueue(Data("1".utf8), key: "k", onConflict: .keep)
    let namespace = container.url.appendingPathComponent("AppGroupMailbox/jobs").path
    var named: [String] = []
    for role in PathRole.allCases {
      let cause = AppGroupMailboxError.IOFailure(
        operation: "open mailbox", systemCall: "", errno: EINVAL, role: role.rawValue)
      guard let entry = cause.entry else { continue }
      named.append(entry)
      var info = stat()
      #expect(lstat(namespace + "/" + entry, &info) == 0, "\(role): \(entry)")
    }
    #expect(
      named.sorted()
        == ["claimed", "delayed", "keys", "pending", "quarantine", "settings", "state", "tmp"])
    let twoRoles = AppGroupMailboxError.IOFailure(
      operation: "enqueue", systemCall: "renameat2", errno: EIO,
      role: "tmp area and the pending area")
    #expect(twoRoles.entry == nil)
    #expect(AppGroupMailboxError.IOFailure.unspecified.entry == nil)
  }
}
