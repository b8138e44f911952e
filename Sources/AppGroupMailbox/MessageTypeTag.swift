import Foundation
import Glibc

/// Which stored `messageType` tags a typed consumer takes.
///
/// The default tag is `String(describing: Message.self)`: the type's name without its module
/// (`Job`, `Array<Job>`; a nested type's innermost name, `Inner`). It is the same in every module
/// that compiles the type, on every launch and for every access level, so an app and its
/// extension that each compile the same source file agree, and a restarted process takes its own
/// backlog. (Earlier versions stored `String(reflecting: Message.self)`, which names the module
/// and, for a `private` or `fileprivate` type, a runtime address that changes on every launch.)
///
/// A consumer takes a message whose tag is empty (untyped) or equal to its own; a consumer with
/// the default tag also takes a tag whose unqualified form (``unqualified(_:)``) equals its own,
/// so messages written with the old qualified default still reach their type. A message with any
/// other tag is left pending for a consumer of its type: the tag alone never deletes or
/// quarantines a message.
struct MessageTypeTag: Sendable, Equatable {
  /// The consumer's tag, stored with each message it enqueues.
  let tag: String
  /// Whether `tag` is the default (no tag was given), which also accepts old qualified tags.
  let isDefault: Bool

  /// The default tag of `type`: `String(describing: type)`.
  static func defaultTag(of type: Any.Type) -> String { String(describing: type) }

  /// Whether a consumer with this tag takes a message stored with `stored`. Tags are compared
  /// by their UTF-8 bytes (Unicode scalars, as interop/python compares them), not by `String`'s
  /// canonical equivalence, which would take `e` and a combining accent for `é`.
  func accepts(_ stored: String) -> Bool {
    stored.isEmpty || stored.utf8.elementsEqual(tag.utf8)
      || (isDefault && Self.unqualified(stored).utf8.elementsEqual(tag.utf8))
  }

  /// `qualified` with every qualified name cut to its last component and every parenthesised
  /// context (such as `(unknown context at $55d0c0a1)`) dropped: `App.Job` becomes `Job`,
  /// `App.(unknown context at $1).Job` becomes `Job`, `Swift.Array<App.Outer.Inner>` becomes
  /// `Array<Inner>`, as `String(describing:)` prints them. - Complexity: O(n) in the bytes.
  static func unqualified(_ qualified: String) -> String {
    var output = ""
    var component = ""
    var depth = 0
    for character in qualified {
      if depth > 0 {
        if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
        continue
      }
      switch character {
      case "(": depth = 1
      case ".": component = ""
      case "<", ">", ",", " ", "[", "]", ":", "?":
        output += component
        output.append(character)
        component = ""
      default: component.append(character)
      }
    }
    return output + component
  }
}

extension Spool {
  /// Whether a claim passes over `name`, which has the passed-over mark `mark`, without
  /// renaming it: a message this consumer put back as another consumer's type, not yet expired
  /// (an expired one is taken, and so deleted, as any other), still in the file that was read.
  /// A confirmed mark answers at no cost; an unconfirmed one (a name with its id arrived since,
  /// or the index listed) costs one lstat(2) (``stillPassedOver(_:_:)``), so a new file under
  /// the name, such as a keyed replacement, is read and claimed. - Complexity: O(1).
  func passesOver(_ name: PendingName, _ mark: PassedOverMarks.Mark) -> Bool {
    guard !isExpired(name, at: now) else { return false }
    return mark.confirmed || stillPassedOver(name, mark)
  }

  /// Looks at the pending entry `name` (lstat(2)): when it is still the file `mark` recorded,
  /// confirms the mark and returns true; when it is another file, drops the mark and returns
  /// false (the claim reads it); when it cannot be looked at (gone, an error), returns false and
  /// leaves the mark (the claim decides about the entry).
  func stillPassedOver(_ name: PendingName, _ mark: PassedOverMarks.Mark) -> Bool {
    let info: stat
    do {
      info = try Syscall.lstat(directories.pending, name.fileName)
    } catch {
      return false
    }
    guard FileIdentity(info) == mark.file else {
      pendingIndex.forgetPassedOver(name.id)
      return false
    }
    pendingIndex.confirm(name.id, mark)
    return true
  }

  /// Forgets every message ``putBack(_:as:file:diagnostics:)`` marked, so the next claim looks
  /// at those messages again (after a migration was registered, some may now be taken).
  func forgetOtherTypes() { pendingIndex.forgetPassedOver() }

  /// Puts a message claimed by ``Spool/claim(limit:passingOver:diagnostics:accept:)`` but of
  /// another consumer's type back under its pending name `entryName` (its original position and
  /// delivery count, so passing over a message never makes it a dead letter) and marks it passed
  /// over with the file that was read, `file` (``PendingIndex/passOver(_:file:)``). Should the
  /// rename fail, the claim stays in `claimed/` and is recovered when its lease runs out; a
  /// conflict in `pending/` follows the one move policy
  /// (``lockedMove(_:_:to:_:id:freshTarget:passingOverFlagged:diagnostics:)``).
  func putBack(
    _ claimed: ClaimedName, as entryName: String, file: FileIdentity,
    diagnostics: inout [AppGroupMailboxDiagnostic]
  ) {
    _ = try? lockedMove(
      directories.claimed, claimed.fileName, to: directories.pending, entryName,
      id: claimed.message.id, diagnostics: &diagnostics)
    pendingIndex.passOver(claimed.message.id, file: file)
    configuration.onPending?()
  }
}
