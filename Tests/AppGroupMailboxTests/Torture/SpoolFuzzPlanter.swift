import Foundation
import Glibc

@testable import AppGroupMailbox

/// The classes of hostile entries the spool-state fuzzer plants; `FUZZ_CLASSES` and `FUZZ_SKIP`
/// take these names (comma-separated).
enum PlantClass: String, CaseIterable, Sendable {
  /// A copy of a message file in another area under the name it would move to (C15).
  case crossAreaCopy = "cross-area-copy"
  /// A hard link to a message file, in its own or another area (C15, C16).
  case hardLink = "hard-link"
  /// A copy of a message file under a new valid name with the same id.
  case duplicateID = "duplicate-id"
  /// Regular files under names that are not message names, in every area.
  case foreignName = "foreign-name"
  /// 255-byte names in every area.
  case longName = "long-name"
  /// Directories, FIFOs, sockets and symlinks (dangling, to a message, to a file outside).
  case nonRegular = "non-regular"
  /// Valid names whose content is empty, truncated, garbage, oversized or of a future format.
  case garbageContent = "garbage-content"
  /// A truncated, empty or garbage `state` line, written in place.
  case state
  /// Valid messages dated 1970 or 2286 in every area, expired or endless leases, old temporaries.
  case farTime = "far-time"
}

/// Plants hostile entries into one namespace, choosing everything from its generator.
struct SpoolFuzzPlanter {
  let namespace: URL
  /// A file outside the mailbox that planted symlinks point at; it must never change.
  let outside: URL
  /// Where planted files are written before they are linked into place.
  let scratch: URL
  var planted = 0
  /// Planted quarantine names (they do not stand for a quarantined message).
  var quarantineNames = Set<String>()
  /// Payloads of the valid messages planted under fresh ids.
  var validPayloads = Set<String>()
  /// Ids of messages copied, linked or duplicated: a copy the library never admitted can outlive
  /// the original, so the depth samples leave these ids out.
  var copiedIDs = Set<UUID>()
  /// Ids of messages copied or linked: under a second valid name (another `enqueuedAt` and
  /// `sequence`) a copy is a second message, and any copy or link still there after its original
  /// was acknowledged is one too (docs/FORMAT.md, "Moves": the format keeps no record of
  /// acknowledged ids), so these may be delivered again; every other check still applies.
  var redeliverableCopyIDs = Set<UUID>()
  /// The payload of every valid envelope planted, by its header id (lower case): a requeue or a
  /// renamed copy of a planted message may deliver it again, like a worker's.
  var plantedPayloads: [String: String] = [:]
  /// Valid delayed messages planted with enqueuedAt and due time in 2286 (they stay until then).
  var permanentPlants = 0

  static let areas = ["pending", "claimed", "delayed", "quarantine", "tmp"]
  /// Computed, not a stored global: LeakSanitizer cannot see a global Data's buffer.
  static var outsideContent: Data { Data("never read, moved or deleted\n".utf8) }

  init(container: URL, namespace: URL) throws {
    self.namespace = namespace
    outside = container.appendingPathComponent("outside-secret")
    scratch = container.appendingPathComponent("plant-scratch")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    try Self.outsideContent.write(to: outside)
  }

  /// A fresh planted id (`eeeeeeee-eeee-4eee-8eee-<n>`), never one a worker uses.
  mutating func freshID() -> UUID {
    planted += 1
    return UUID(uuidString: String(format: "eeeeeeee-eeee-4eee-8eee-%012llx", UInt64(planted)))!
  }

  func path(_ area: String, _ name: String) -> String {
    namespace.appendingPathComponent(area).path + "/" + name
  }

  /// Messages now in pending, claimed and delayed: area, name and the pending name it carries.
  func messages() -> [(area: String, name: String, message: PendingName)] {
    var found: [(String, String, PendingName)] = []
    for area in ["pending", "claimed", "delayed"] {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: path(area, ""))) ?? []
      for name in names.sorted() {
        if let message = PendingName(parsing: name) ?? ClaimedName(parsing: name)?.message
          ?? DelayedName(parsing: name)?.message
        {
          found.append((area, name, message))
        }
      }
    }
    return found
  }

  /// A name in `area` for `message`: its pending name, a due or future delayed name, a claim
  /// with a lapsed or live lease, or a quarantine name.
  mutating func name(in area: String, for message: PendingName, _ random: inout SeededGenerator)
    -> String
  {
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let offset = Int64(random.next() % 4_000_000) - 2_000_000
    switch area {
    case "pending": return message.fileName
    case "delayed": return DelayedName(dueMicros: now + offset, message: message).fileName
    case "claimed":
      return ClaimedName(message: message, token: random.next(), leaseUntilMicros: now + offset)
        .fileName
    default:
      let reason = QuarantineReason.allCases[Int(random.next() % 7)]
      let name = QuarantineName(
        micros: now, reason: reason, id: message.id,
        nonce: UInt32(truncatingIfNeeded: random.next())
      ).fileName
      quarantineNames.insert(name)
      return name
    }
  }

  /// Places `bytes` at `area/name` without replacing anything (written beside, then linked).
  func place(_ bytes: Data, _ area: String, _ name: String) {
    let source = scratch.appendingPathComponent(UUID().uuidString).path
    guard FileManager.default.createFile(atPath: source, contents: bytes) else { return }
    _ = link(source, path(area, name))
    unlink(source)
  }

  /// A valid envelope for `payload` (an untyped message every consumer accepts), recorded in
  /// ``plantedPayloads``.
  mutating func envelope(_ id: UUID, _ micros: Int64, _ payload: String) -> Data {
    plantedPayloads[id.uuidString.lowercased()] = payload
    return Self.unrecordedEnvelope(id, micros, payload)
  }

  /// A valid envelope for `payload`, not recorded (for content that is then broken).
  static func unrecordedEnvelope(_ id: UUID, _ micros: Int64, _ payload: String) -> Data {
    (try? Envelope.encode(
      id: id, enqueuedAt: micros, messageType: "",
      payload: JSONEncoder().encode(payload))) ?? Data()
  }

  /// Plants one entry of `kind`; returns what it did, for the failure report.
  mutating func plant(_ kind: PlantClass, _ random: inout SeededGenerator) -> String {
    func pick(_ count: Int) -> Int { Int(random.next() % UInt64(max(1, count))) }
    let area = Self.areas[pick(Self.areas.count)]
    let messageAreas = ["pending", "claimed", "delayed"]
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    switch kind {
    case .crossAreaCopy, .hardLink, .duplicateID:
      let found = messages()
      guard !found.isEmpty else { return "\(kind.rawValue): no message to copy" }
      let (from, fromName, message) = found[pick(found.count)]
      copiedIDs.insert(message.id)
      redeliverableCopyIDs.insert(message.id)
      // The header may carry another id (a planted mismatch): a requeue delivers it as that.
      if let bytes = FileManager.default.contents(atPath: path(from, fromName)),
        let header = try? Envelope.decode(Array(bytes)).0, let id = UUID(uuidString: header.id)
      {
        redeliverableCopyIDs.insert(id)
      }
      var target = message
      if kind == .duplicateID || (kind == .hardLink && pick(2) == 0) {
        target.key = MessageKey(micros: now, sequence: random.next() % 1_000_000_000)
      }
      let to =
        kind == .hardLink
        ? messageAreas[pick(3)] : ["pending", "claimed", "delayed", "quarantine"][pick(4)]
      let name = name(in: to, for: target, &random)
      if kind == .hardLink {
        _ = link(path(from, fromName), path(to, name))
      } else if let bytes = FileManager.default.contents(atPath: path(from, fromName)) {
        place(bytes, to, name)
      }
      return "\(kind.rawValue): \(from)/\(fromName) -> \(to)/\(name)"
    case .foreignName:
      let names = [
        "README", ".hidden", "x.msg", "0-1-2-3.msg", "\(now)-foreign.claim", "\(now).tmp",
      ]
      let name = names[pick(names.count)] + "-\(random.next() % 1000)"
      let first = messages().first
      let bytes = first.flatMap { FileManager.default.contents(atPath: path($0.area, $0.name)) }
      if let first { copiedIDs.insert(first.message.id) }
      place(pick(2) == 0 ? (bytes ?? Data()) : Data("foreign".utf8), area, name)
      return "foreign-name: \(area)/\(name)"
    case .longName:
      let id = freshID()
      let stem = PendingName(key: MessageKey(micros: now, sequence: 1), id: id, attempts: 0)
        .fileName
      let name =
        pick(2) == 0
        ? String(repeating: "a", count: 255)
        : stem + String(repeating: "9", count: 255 - stem.utf8.count)
      validPayloads.insert("long\(planted)")
      place(envelope(id, now, "long\(planted)"), area, name)
      return "long-name: \(area)/\(name.prefix(20))..."
    case .nonRegular:
      return plantNonRegular(area: messageAreas[pick(3)], kind: pick(6), &random)
    case .garbageContent:
      let id = freshID()
      let valid = Self.unrecordedEnvelope(id, now, "garbage")
      let variants: [Data] = [
        Data(), valid.prefix(valid.count / 2),
        Data((0..<64).map { _ in UInt8(random.next() & 0xff) }),
        Data(count: 4_096), envelope(freshID(), now, "wrongid\(planted)"),
        Data(
          #"{"enqueuedAt":1,"format":99,"id":"\#(id.uuidString.lowercased())","messageType":""}"#
            .utf8 + [10] + Array("\"f\"".utf8)),
        Data(count: 70_000), valid.prefix(valid.count - 3) + Data("42".utf8),
      ]
      validPayloads.insert("wrongid\(planted)")  // A requeue takes the header's id.
      let variant = pick(variants.count)
      if variant == 4 {
        // Quarantined under the name's id, requeued under the header's: both name the payload.
        plantedPayloads[id.uuidString.lowercased()] = "wrongid\(planted)"
      }
      let message = PendingName(key: MessageKey(micros: now, sequence: 1), id: id, attempts: 0)
      let to = messageAreas[pick(3)]
      place(variants[variant], to, name(in: to, for: message, &random))
      return "garbage-content: variant \(variant) in \(to)"
    case .state:
      let lines = [
        "", "1 ", "1 00000000000000000001 00000000000", "garbage\n",
        String(repeating: "9", count: 65),
        "1 x0000000000000000001 00000000000000000001 00000000000000000001\n",
      ]
      let line = lines[pick(lines.count)]
      let fd = open(namespace.appendingPathComponent("state").path, O_WRONLY | O_TRUNC)
      if fd >= 0 {
        _ = line.withCString { write(fd, $0, strlen($0)) }
        close(fd)
      }
      return "state: \(line.debugDescription)"
    case .farTime:
      let id = freshID()
      let payload = "z\(planted)"
      validPayloads.insert(payload)
      let far: Int64 = pick(2) == 0 ? 1 : MessageKey.maxMicros
      let message = PendingName(
        key: MessageKey(micros: far, sequence: random.next() % 1_000), id: id, attempts: 0)
      let to = ["pending", "claimed", "delayed", "tmp"][pick(4)]
      var name = message.fileName
      switch to {
      case "claimed":
        name =
          ClaimedName(
            message: message, token: random.next(),
            leaseUntilMicros: pick(2) == 0 ? 1 : MessageKey.maxMicros
          ).fileName
      case "delayed":
        var due = pick(2) == 0 ? 1 : MessageKey.maxMicros
        if due == far, far == MessageKey.maxMicros {
          // Enqueued and due in 2286: a valid message that holds its place in the depth bound
          // until then, as any long delay does. A few of them, so the mailbox keeps room.
          permanentPlants += 1
          if permanentPlants > SpoolFuzzSettings.maxMessages / 6 { due = 1 }
        }
        name = DelayedName(dueMicros: due, message: message).fileName
      case "tmp": name = "\(random.next() % 100_000)-\(planted).tmp"
      default: break
      }
      place(envelope(id, far, payload), to, name)
      if to == "tmp" {
        var times = [timespec(tv_sec: pick(2) == 0 ? 1 : 9_999_999_999, tv_nsec: 0)]
        times.append(times[0])
        _ = utimensat(AT_FDCWD, path(to, name), times, 0)
      }
      return "far-time: \(to)/\(name)"
    }
  }

  /// A directory (with content), FIFO, socket, or symlink (dangling, to a message, to the
  /// outside file) under a valid message name with a fresh id.
  mutating func plantNonRegular(area: String, kind: Int, _ random: inout SeededGenerator) -> String
  {
    let id = freshID()
    let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
    let message = PendingName(key: MessageKey(micros: now, sequence: 2), id: id, attempts: 0)
    let target = path(area, name(in: area, for: message, &random))
    switch kind {
    case 0:
      mkdir(target, 0o700)
      mkdir(target + "/inner", 0o700)
      _ = FileManager.default.createFile(atPath: target + "/inner/file", contents: Data("x".utf8))
    case 1: mkfifo(target, 0o600)
    case 2: mknod(target, S_IFSOCK | 0o600, 0)
    case 3: symlink(namespace.path + "/nowhere", target)
    case 4: symlink(outside.path, target)
    default:
      let found = messages()
      if let message = found.first { symlink(path(message.area, message.name), target) }
    }
    return "non-regular \(kind): \(target)"
  }
}
