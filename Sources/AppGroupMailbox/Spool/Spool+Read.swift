import Foundation
import Glibc

/// The one checked reader of message files. Every path that reads one (a claim, a claim
/// rebuilt from its token, eviction's check of the oldest, inspection's `show`, requeue from
/// quarantine, migration, and the byte copies and comparisons of links and leftovers) goes
/// through ``Spool/readEntry(_:_:limit:singleLink:extent:unchanged:)``, and every one of them
/// that needs the envelope through ``Spool/readMessage(_:_:id:checkType:extent:unchanged:)``,
/// so what a reader refuses, and the quarantine reason each refusal carries, is decided here
/// once (``Spool/ReadFailure``). What the entry itself shows before it is opened (its type and
/// links, by lstat(2)) is judged once too, by ``Spool/look(at:clock:)``.
extension Spool {
  /// Why a message file cannot be delivered, and for each reason what quarantine records.
  enum ReadFailure: Error, Hashable {
    /// Not a regular file, or one that cannot be opened safely (a symlink: `ELOOP`; a socket or
    /// device: `ENXIO`, `ENODEV`; `EISDIR`; a FIFO that would block: `EWOULDBLOCK`; `EACCES`).
    case unsafe
    /// A regular file with more than one link (a claim puts it back and looks again later).
    case linked
    /// Larger than the read limit (by fstat(2), or by what the read delivered).
    case oversized
    /// Empty, no header line, a header that does not decode, or an id that is not the name's.
    case malformed
    /// An envelope format newer than this build reads.
    case future
    /// Another consumer's type, or a payload version this consumer does not read: put back,
    /// never quarantined (see ``MessageTypeTag`` and ``AppGroupMailboxVersionedMessage``); the
    /// file that was read, which its ``PassedOverMarks`` mark records.
    case otherType(FileIdentity)
    /// The entry is gone (another process removed or moved it), or it is no longer the file
    /// that was looked at: skipped, nothing to quarantine.
    case vanished

    var quarantine: QuarantineReason {
      switch self {
      case .unsafe, .linked, .vanished: .unsafe
      case .oversized: .oversized
      case .malformed: .malformed
      case .future: .future
      case .otherType: .wrongtype
      }
    }
  }

  /// How much of a checked file a reader reads.
  enum ReadExtent {
    /// The whole file, at most the limit plus one byte.
    case whole
    /// At most its first ``Envelope/maxHeaderBytes``: enough to judge the header line.
    case header
  }

  /// A message file that passed every check.
  struct CheckedMessage {
    /// The file's status on the opened descriptor.
    var info: stat
    /// The bytes read (with ``ReadExtent/header``, at most the first 4 KiB).
    var bytes: FileBytes
    /// The decoded header line.
    var header: EnvelopeHeader
    /// Where the encoded message lies in ``bytes``.
    var messageRange: Range<Int>
    /// The encoded message: the bytes of ``messageRange`` in the reader's own allocation, not a
    /// copy (``FileBytes/data(_:)``); empty with ``ReadExtent/header``.
    var message: Data
  }

  /// What the entry itself shows before it is opened, judged by one rule for claims and
  /// eviction alike.
  enum EntryLook {
    /// A regular file with one link: open and read it.
    case regular
    /// Not a regular file (symlink, FIFO, socket, device, directory): quarantined as unsafe,
    /// as it is, without following or opening it.
    case notRegular
    /// A regular file with more links, the newest younger than ``Spool/linkedEntryGrace``:
    /// left alone until this clock reading (microseconds).
    case youngLink(lookAgainAt: Int64)
    /// A regular file with more links past the grace: quarantined as a copy
    /// (``Spool/quarantineLinked(from:_:id:diagnostics:)``).
    case oldLink
  }

  /// Judges an entry by its lstat(2) status at the clock reading `clock` (microseconds). The
  /// link's age is measured from the entry's ctime, which link(2) and unlink(2) update and
  /// nobody can set.
  func look(at info: stat, clock: Int64) -> EntryLook {
    guard info.st_mode & S_IFMT == S_IFREG else { return .notRegular }
    guard info.st_nlink > 1 else { return .regular }
    let changed = Int64(info.st_ctim.tv_sec) * 1_000_000 + Int64(info.st_ctim.tv_nsec) / 1_000
    return clock - changed >= Self.linkedEntryGrace
      ? .oldLink : .youngLink(lookAgainAt: changed + Self.linkedEntryGrace)
  }

  /// Reads and checks one claimed file (see ``readMessage(_:_:id:checkType:extent:unchanged:)``):
  /// its id must be the name's, and its type tag and payload version ones the consumer takes.
  /// - Throws: ``AppGroupMailboxError/ioFailure(_:)`` (operation `"claim"`).
  func read(_ claimed: ClaimedName) throws -> Result<RawClaim, ReadFailure> {
    try mapIO("claim") {
      try readMessage(
        directories.claimed, claimed.fileName, id: claimed.message.id, checkType: true)
    }.map {
      RawClaim(
        name: claimed, header: $0.header, payload: $0.message, inode: UInt64($0.info.st_ino))
    }
  }

  /// Reads the message file `name` of `directory` with ``readEntry(_:_:limit:singleLink:extent:unchanged:)``
  /// at the mailbox's read limit, then decodes its envelope: ``ReadFailure/future`` for a newer
  /// format, ``ReadFailure/malformed`` for any other envelope that does not decode or (given
  /// `id`) whose id is not `id`, and (with `checkType`) ``ReadFailure/otherType`` when the
  /// consumer's ``MessageTypeTag`` does not take its type or its payload version is one the
  /// consumer does not read (``SpoolConfiguration/payloadVersions``).
  /// - Throws: ``SystemCallError`` as ``readEntry(_:_:limit:singleLink:extent:unchanged:)``.
  func readMessage(
    _ directory: Int32, _ name: some SystemName, id: UUID? = nil, checkType: Bool = false,
    extent: ReadExtent = .whole, unchanged stamp: FileStamp? = nil
  ) throws -> Result<CheckedMessage, ReadFailure> {
    try readEntry(directory, name, extent: extent, unchanged: stamp).flatMap { info, bytes in
      let header: EnvelopeHeader
      let range: Range<Int>
      do throws(EnvelopeError) {
        (header, range) = try bytes.withUnsafeBytes { (buffer) throws(EnvelopeError) in
          try Envelope.decode(buffer)
        }
      } catch .futureFormat {
        return .failure(.future)
      } catch {
        return .failure(.malformed)
      }
      if let id, (NameBytes.parseUUID(header.id.utf8) ?? UUID(uuidString: header.id)) != id {
        return .failure(.malformed)
      }
      if checkType, let tag = configuration.messageTypeTag, !tag.accepts(header.messageType) {
        return .failure(.otherType(FileIdentity(info)))
      }
      // A payload version it does not read: passed over alike.
      if checkType, let versions = configuration.payloadVersions,
        !versions.accepts(header.declaredPayloadVersion)
      {
        return .failure(.otherType(FileIdentity(info)))
      }
      let message = extent == .whole ? bytes.data(range) : Data()
      return .success(
        CheckedMessage(
          info: info, bytes: bytes, header: header, messageRange: range, message: message))
    }
  }

  /// What open(2) answers for an entry the reader must not read (see ``ReadFailure/unsafe``).
  static let unsafeOpenRefusals: Set<Errno> = [
    .tooManySymbolicLinkLevels, .noSuchAddressOrDevice, .isDirectory, .wouldBlock,
    .operationNotSupportedByDevice, .permissionDenied,
  ]

  /// Opens, checks and reads the entry `name` of `directory`, in this order:
  ///
  /// 1. opened without following links, blocking or becoming a controlling terminal
  ///    (`O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`, open(2)); refusals are ``ReadFailure/unsafe``,
  ///    ENOENT is ``ReadFailure/vanished``;
  /// 2. checked on the descriptor (fstat(2)) before a byte is read: the `unchanged` stamp when
  ///    given (else ``ReadFailure/vanished``: the name now holds another file), a regular file,
  ///    one link unless `singleLink` is false (``ReadFailure/linked``), a size of at most the
  ///    limit (``ReadFailure/oversized``);
  /// 3. read from offset 0 (``Syscall/readCapped(_:expected:limit:)``: the buffer is sized by
  ///    the file, never by the limit), at most the limit plus one byte, so a file that grows
  ///    while it is read is cut there and reported oversized; with ``ReadExtent/header`` at most
  ///    the first ``Envelope/maxHeaderBytes``. The bytes stay in the reader's own allocation
  ///    (``FileBytes``), from which the payload is handed out without a copy.
  ///
  /// - Parameter limit: The most bytes accepted; nil means the mailbox's read limit (the largest
  ///   payload its settings allow, looked up again when a file is larger).
  /// - Throws: ``SystemCallError`` for a failure that says nothing about the file (EMFILE, EIO,
  ///   ENOMEM...): the caller maps it to its operation.
  /// - Complexity: one open, one fstat, and reads of O(min(file size, limit)) bytes.
  func readEntry(
    _ directory: Int32, _ name: some SystemName, limit: Int? = nil, singleLink: Bool = true,
    extent: ReadExtent = .whole, unchanged stamp: FileStamp? = nil
  ) throws -> Result<(stat, FileBytes), ReadFailure> {
    let file: FileDescriptor
    do {
      let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
      file = try FileDescriptor.open(directory, name, flags, role: .messageFile)
    } catch let error as SystemCallError where Self.unsafeOpenRefusals.contains(error.errno) {
      return .failure(.unsafe)
    } catch let error as SystemCallError where error.isNotFound {
      return .failure(.vanished)
    }
    let fd = file.rawValue
    let info = try file.status()
    if let stamp, FileStamp(info) != stamp { return .failure(.vanished) }
    guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.unsafe) }
    guard !singleLink || info.st_nlink == 1 else { return .failure(.linked) }
    let size = Int(info.st_size)
    let maximum: Int
    if let limit {
      guard size <= limit else { return .failure(.oversized) }
      maximum = limit
    } else {
      guard acceptsMessageSize(size) else { return .failure(.oversized) }
      maximum = readLimit
    }
    if extent == .header {
      return .success((info, try Syscall.readPrefix(fd, count: min(size, Envelope.maxHeaderBytes))))
    }
    let bytes = try Syscall.readCapped(fd, expected: size, limit: maximum)
    guard bytes.count <= maximum else { return .failure(.oversized) }
    return .success((info, bytes))
  }
}
