import Foundation
import Glibc

extension Spool {
  /// Why a claimed file cannot be delivered.
  enum ReadFailure: Error {
    case unsafe, linked, oversized, malformed, future
    /// Another consumer's type: put back, never quarantined (see ``MessageTypeTag``).
    case otherType
    /// The claimed file is gone (another process removed it): skipped, nothing to quarantine.
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

  /// Reads and checks one claimed file: opened without following links, blocking or becoming a
  /// controlling terminal (`O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`), checked on the descriptor
  /// (regular, one link, size at most ``AppGroupMailboxLimits/maxPayloadBytes``) before a byte is
  /// read, read to at most the limit plus one byte (a file that grows while it is read is cut
  /// there and reported oversized), its envelope and id verified, and its type tag compared
  /// with the consumer's (``ReadFailure/otherType`` when another consumer's).
  func read(_ claimed: ClaimedName) throws -> Result<RawClaim, ReadFailure> {
    try read(directories.claimed, claimed.fileName).map { header, payload in
      RawClaim(name: claimed, header: header, payload: payload)
    }.flatMap { raw in
      guard
        NameBytes.parseUUID(raw.header.id.utf8) ?? UUID(uuidString: raw.header.id)
          == claimed.message.id
      else {
        return .failure(.malformed)
      }
      if let tag = configuration.messageTypeTag, !tag.accepts(raw.header.messageType) {
        return .failure(.otherType)
      }
      return .success(raw)
    }
  }

  /// Opens, checks and reads the message file `name` of `directory`; see ``read(_:)``.
  func read(_ directory: Int32, _ name: String) throws -> Result<
    (EnvelopeHeader, Data), ReadFailure
  > {
    let fd: Int32
    do {
      fd = try Syscall.open(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    } catch let error as SystemCallError
      where error.errno == ELOOP || error.errno == ENXIO || error.errno == EISDIR
      || error.errno == EWOULDBLOCK || error.errno == ENODEV || error.errno == EACCES
    {
      return .failure(.unsafe)
    } catch let error as SystemCallError where error.isNotFound {
      return .failure(.vanished)
    } catch let error as SystemCallError {
      throw error.mailboxError("claim")
    }
    defer { Syscall.close(fd) }
    let info = try mapIO("claim") { try Syscall.fstat(fd) }
    guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.unsafe) }
    guard info.st_nlink == 1 else { return .failure(.linked) }
    guard acceptsMessageSize(Int(info.st_size)) else { return .failure(.oversized) }
    let maximum = readLimit
    let bytes = try mapIO("claim") {
      try Syscall.readCapped(fd, expected: Int(info.st_size), limit: maximum)
    }
    guard bytes.count <= maximum else { return .failure(.oversized) }
    do {
      let (header, range) = try Envelope.decode(bytes)
      return .success((header, Data(bytes[range])))
    } catch .futureFormat {
      return .failure(.future)
    } catch {
      return .failure(.malformed)
    }
  }
}
