public import Foundation

extension AppGroupRawMailbox {
  /// The printable name of one claim, so a later process can acknowledge, release or renew it
  /// (a Linux addition, used by `mailboxctl claim` and `ack|release|renew TOKEN`).
  ///
  /// Its text is `<message id>.<claim nonce>`: the message UUID in lower case, a dot, and the 16
  /// lower-case hexadecimal digits of the random nonce in the claimed file's name (see
  /// docs/FORMAT.md). Every claim of a message draws a fresh nonce, so the token of a claim that
  /// was recovered (its lease ran out) or finished never names a later claim of the same
  /// message. A renewal keeps the token. The text holds no path component and is checked
  /// strictly: it is safe to take from a command line.
  public struct ClaimToken: Sendable, Hashable, LosslessStringConvertible {
    /// The claimed message's id.
    public let id: UUID
    /// The claim's random nonce (the `<token>` field of the claimed file name).
    let nonce: UInt64

    init(id: UUID, nonce: UInt64) {
      self.id = id
      self.nonce = nonce
    }

    /// Parses a token's text; nil unless `text` is exactly 36 characters of a lower-case UUID,
    /// a dot and 16 lower-case hexadecimal digits (53 bytes).
    public init?(_ text: String) {
      let bytes = Array(text.utf8)
      guard bytes.count == 53, bytes[36] == UInt8(ascii: "."),
        bytes[37...].allSatisfy({ Self.isLowerHex($0) }),
        let id = NameBytes.parseUUID(bytes[..<36]),
        let nonce = UInt64(String(decoding: bytes[37...], as: UTF8.self), radix: 16)
      else { return nil }
      self.init(id: id, nonce: nonce)
      // The one spelling: a parsed token formats back to the same bytes.
      guard description == text else { return nil }
    }

    /// The token's text, `<uuid>.<16 hex digits>`.
    public var description: String {
      var bytes: [UInt8] = []
      NameBytes.uuid(id, into: &bytes)
      bytes.append(UInt8(ascii: "."))
      NameBytes.hex(nonce, width: 16, into: &bytes)
      return String(decoding: bytes, as: UTF8.self)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
      (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
  }

  /// The claim `token` names, as a handle whose ``Claim/acknowledge()``, ``Claim/release()``,
  /// ``Claim/release(retryAfter:)`` and ``Claim/renew()`` act on it exactly as on the handle
  /// ``claimPending(limit:)`` returned (any process may rebuild it; one process at a time
  /// should act on a token). The message file is read again, so the handle's payload, type and
  /// dates are those of the claim. Nothing is recovered, swept or changed.
  ///
  /// - Throws: ``AppGroupMailboxError/claimNoLongerExists`` when no claim with this token is in
  ///   `claimed/` (it was acknowledged, released, or recovered after its lease ran out);
  ///   ``AppGroupMailboxError/decodingFailure`` when its file no longer holds a readable
  ///   message; ``AppGroupMailboxError/ioFailure(_:)``.
  /// - Complexity: O(n) in the claimed entries (one listing, a second one when the first missed
  ///   the claim while it was being renamed), plus one read of the message file.
  public func claim(token: ClaimToken) throws -> Claim {
    // The file can move between the lookup and the read (a renewal): look again then.
    for _ in 0..<2 {
      guard let name = try spool.claimedName(of: token.id, token: token.nonce) else { break }
      switch try spool.read(name) {
      case .success(let raw):
        return Claim(raw: raw, mailbox: self)
      case .failure(.vanished):
        continue
      case .failure:
        throw AppGroupMailboxError.decodingFailure
      }
    }
    throw AppGroupMailboxError.claimNoLongerExists
  }
}
