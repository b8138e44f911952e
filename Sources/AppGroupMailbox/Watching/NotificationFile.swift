import Foundation
import Glibc
import MailboxLocks

/// The file that stands for a notification name: `<container>/AppGroupMailbox/@notify/<encoded
/// name>` (see docs/WAKEUPS.md). A producer posts by updating its times (utimensat(2), creating
/// it on first use); consumers watch the `@notify` directory for that name.
///
/// `@` is not allowed in a namespace, so `@notify` never collides with a mailbox.
struct NotificationFile: Sendable {
  static let directoryName = "@notify"

  let containerPath: String
  let name: String
  /// The encoded file name (see ``encode(_:)``).
  let fileName: String
  let permissions: AppGroupMailboxPermissions

  /// - Throws: ``AppGroupMailboxError/invalidLimit(_:)`` (`"notificationName"`) when `name` is
  ///   empty or its encoding is longer than 255 bytes (`NAME_MAX`).
  init(containerPath: String, name: String, permissions: AppGroupMailboxPermissions) throws {
    guard let encoded = Self.encode(name) else {
      throw AppGroupMailboxError.invalidLimit("notificationName")
    }
    self.containerPath = containerPath
    self.name = name
    self.fileName = encoded
    self.permissions = permissions
  }

  var directoryPath: String {
    containerPath + "/" + SpoolDirectories.root + "/" + Self.directoryName
  }

  /// The file name for a notification name: its UTF-8 bytes, each byte outside
  /// `A-Z a-z 0-9 _ -` and `.` (and a leading `.`, and `%`) written as `%XX` in upper-case hex.
  /// One-to-one, never `.`, `..` or containing `/`. Nil when empty or longer than 255 bytes.
  static func encode(_ name: String) -> String? {
    var out = ""
    for (index, byte) in name.utf8.enumerated() {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      case UInt8(ascii: ".") where index > 0:
        out.append(".")
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    guard (1...Int(NAME_MAX)).contains(out.utf8.count) else { return nil }
    return out
  }

  /// Opens (creating when missing) `AppGroupMailbox/@notify` below the container, refusing
  /// symlinks below the container (like ``SpoolDirectories``).
  /// - Throws: ``AppGroupMailboxError/containerUnavailable(_:)`` naming the failed call, its
  ///   errno and the directory's role (operation `"open notification directory"`).
  func openDirectory() throws -> FileDescriptor {
    // A missing container and its parents get the mailbox's directory mode, as the mailbox
    // makes them, whatever the umask (a failure shows in the open below).
    _ = SpoolDirectories.createMissing(containerPath, mode: permissions.directoryMode)
    do {
      let container = try FileDescriptor.open(
        AT_FDCWD, containerPath, O_RDONLY | O_DIRECTORY, role: .container)
      let root = try openOrCreate(container.rawValue, SpoolDirectories.root, .mailboxesDirectory)
      return try openOrCreate(root.rawValue, Self.directoryName, .notificationDirectory)
    } catch let error as SystemCallError {
      throw AppGroupMailboxError.containerUnavailable(error.cause("open notification directory"))
    }
  }

  private func openOrCreate(_ parent: Int32, _ name: String, _ role: PathRole) throws
    -> FileDescriptor
  {
    let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
    if let fd = try? FileDescriptor.open(parent, name, flags, role: role) { return fd }
    try? Syscall.makeDirectory(parent, name, mode: permissions.directoryMode)
    let fd = try FileDescriptor.open(parent, name, flags, role: role)
    if permissions == .groupShared { try? Syscall.chmod(fd.rawValue, permissions.directoryMode) }
    return fd
  }
}

/// Posts a notification name after each enqueue, release and recovery (the mailbox's
/// `onPending`). Keeps the `@notify` directory open between posts; a post is one utimensat(2)
/// (`IN_ATTRIB` for watchers), or an `O_CREAT` open the first time (`IN_CREATE`). A post that
/// fails is dropped: wake-ups are hints, and watchers of the mailbox itself still see the
/// pending area change.
final class NotificationPoster: Sendable {
  let file: NotificationFile
  private let directory = Locked<FileDescriptor?>(nil)

  init(file: NotificationFile) { self.file = file }

  /// Touches the notification file, re-opening the directory once when it was removed.
  func post() {
    directory.withLock { held in
      for _ in 0..<2 {
        if held == nil {
          guard let opened = try? file.openDirectory() else { return }
          held = consume opened
        }
        if let fd = held?.rawValue, touch(fd) { return }
        held = nil  // closes it
      }
    }
  }

  private func touch(_ fd: Int32) -> Bool {
    if (try? Syscall.retrying("utimensat", at: fd) {
      utimensat(fd, file.fileName, nil, AT_SYMLINK_NOFOLLOW)
    }) != nil {
      return true
    }
    let flags = O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
    let created = try? FileDescriptor.open(
      fd, file.fileName, flags, mode: file.permissions.fileMode, role: .notificationDirectory)
    return created != nil
  }
}
