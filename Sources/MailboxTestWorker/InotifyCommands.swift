import AppGroupMailbox
import Foundation
import Glibc

#if DEBUG
  @testable import AppGroupMailbox
#endif

// Commands for the shared inotify instance tests (Tests/AppGroupMailboxTests/FastPaths/
// SharedInotifyTests.swift). Each prints result lines on stdout.
//
// `inotify-instances CONTAINER COUNT READY GO`: opens COUNT mailboxes, enqueues one message in
//   each and claims it, opens a watcher on the first; prints `holding <inotify descriptors>
//   <watches>`, creates READY, waits for GO; closes everything and prints `after <inotify
//   descriptors> <watches> <hub users>`.
// `index-cross DIR`: (debug builds) two pending indexes on DIR/a and DIR/b; a name arriving in
//   DIR/a is read from the shared descriptor by b's refresh; prints `queued true` (events wait
//   in the kernel), `queued after b 0`, `listings <a> <b>`, then
//   `a <names a's next refresh returns, in order>`.
// `index-overflow DIR`: (debug builds) as `index-cross`, but more names arrive in DIR/a than
//   the kernel queues (`fs.inotify.max_queued_events`, then `IN_Q_OVERFLOW`); prints
//   `listings <a> <b>` after both refreshed again and `a <count> ordered <true|false>`.
// `index-fallback DIR CALL ERRNO`: (debug builds) makes every CALL fail with ERRNO, then
//   refreshes one index three times with a name arriving in between; prints `watching <bool>
//   users <hub users> listings <count>` and `names <in order>`.

/// The inotify descriptors (`anon_inode:inotify` links in /proc/self/fd, proc(5)) and watches
/// (`inotify wd:` lines of their fdinfo) this process holds.
func inotifyHoldings() -> (descriptors: Int, watches: Int) {
  let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var descriptors = 0
  var watches = 0
  for name in names {
    guard
      let target = try? FileManager.default.destinationOfSymbolicLink(
        atPath: "/proc/self/fd/" + name), target == "anon_inode:inotify"
    else { continue }
    descriptors += 1
    let info = (try? String(contentsOfFile: "/proc/self/fdinfo/" + name, encoding: .utf8)) ?? ""
    watches += info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
  }
  return (descriptors, watches)
}

/// The bytes of events queued in this process's inotify descriptors (FIONREAD, inotify(7)).
func inotifyQueuedBytes() -> Int {
  let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  var total = 0
  for name in names {
    guard let fd = Int32(name),
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name))
        == "anon_inode:inotify"
    else { continue }
    var queued: Int32 = 0
    if ioctl(fd, UInt(FIONREAD), &queued) == 0 { total += Int(queued) }
  }
  return total
}

#if DEBUG
  /// A pending index on one directory, counting its listings.
  final class ProbedIndex {
    let fd: Int32
    let path: String
    let index = PendingIndex()
    var listings = 0

    init(_ path: String) throws {
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
      self.path = path
      fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
      guard fd >= 0 else { throw WorkerTimeout(what: "open \(path)") }
    }

    deinit { close(fd) }

    func refresh() throws {
      _ = try index.refresh(pending: fd) { add in
        listings += 1
        return try PendingIndex.listing(fd, add)
      }
    }

    /// Creates an empty file under a message name with key (`micros`, `sequence`).
    @discardableResult func arrive(_ micros: Int64, _ sequence: UInt64 = 0) throws -> PendingName {
      let name = PendingName(
        key: MessageKey(micros: micros, sequence: sequence), id: UUID(), attempts: 0)
      let file = open(path + "/" + name.fileName, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
      guard file >= 0 else { throw WorkerTimeout(what: "create \(name.fileName)") }
      close(file)
      return name
    }

    /// Every name the index knows, in the order claims would take them.
    func drain() -> [PendingName] {
      var names: [PendingName] = []
      while let name = index.next() { names.append(name) }
      return names
    }
  }
#endif

let inotifyCommands: [WorkerCommand] = [
  WorkerCommand(name: "inotify-instances") { args in
    let container = URL(fileURLWithPath: args[0])
    let count = Int(args[1]) ?? 0
    var mailboxes: [AppGroupMailbox<Int>] = []
    for number in 0..<count {
      let mailbox = try AppGroupMailbox<Int>(
        containerURL: container, namespace: "m\(number)", durability: .relaxed)
      try mailbox.enqueue(number)
      for claim in try mailbox.claimPending(limit: 1) { try claim.acknowledge() }
      mailboxes.append(mailbox)
    }
    var watcher = try mailboxes.first?.wakeUps()
    let holding = inotifyHoldings()
    emitLine("holding \(holding.descriptors) \(holding.watches)")
    try startTogether(ready: args[2], go: args[3])
    watcher?.close()
    watcher = nil
    mailboxes.removeAll()
    let after = inotifyHoldings()
    #if DEBUG
      let users = InotifyHub.users
    #else
      let users = -1
    #endif
    emitLine("after \(after.descriptors) \(after.watches) \(users)")
  },
  WorkerCommand(name: "index-cross") { args in
    #if DEBUG
      let a = try ProbedIndex(args[0] + "/a")
      let b = try ProbedIndex(args[0] + "/b")
      let first = try a.arrive(20)
      try a.refresh()
      try b.refresh()
      // No watcher: no reader thread, so b's refresh is what reads a's events.
      let older = try a.arrive(10)
      let newer = try a.arrive(30)
      emitLine("queued \(inotifyQueuedBytes() > 0)")
      try b.refresh()
      emitLine("queued after b \(inotifyQueuedBytes())")
      try a.refresh()
      emitLine("listings \(a.listings) \(b.listings)")
      let expected = [older, first, newer]
      emitLine("a \(a.drain() == expected ? "in order" : "wrong")")
    #else
      throw WorkerTimeout(what: "index-cross needs a debug build")
    #endif
  },
  WorkerCommand(name: "index-overflow") { args in
    #if DEBUG
      let a = try ProbedIndex(args[0] + "/a")
      let b = try ProbedIndex(args[0] + "/b")
      try a.refresh()
      try b.refresh()
      let queued =
        (try? String(
          contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
        .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16_384
      let total = queued + 10
      for number in 0..<total { try a.arrive(Int64(total - number)) }
      try b.refresh()
      try a.refresh()
      emitLine("listings \(a.listings) \(b.listings)")
      let names = a.drain()
      let ordered = zip(names, names.dropFirst()).allSatisfy { $0.key.micros < $1.key.micros }
      emitLine("a \(names.count == total) ordered \(ordered)")
    #else
      throw WorkerTimeout(what: "index-overflow needs a debug build")
    #endif
  },
  WorkerCommand(name: "index-fallback") { args in
    #if DEBUG
      FaultInjection.add(
        .init(call: args[1], errno: Int32(args[2]) ?? EIO, skip: 0, count: Int.max))
      let index = try ProbedIndex(args[0] + "/a")
      let first = try index.arrive(20)
      try index.refresh()
      let older = try index.arrive(10)
      try index.refresh()
      let newer = try index.arrive(30)
      try index.refresh()
      emitLine(
        "watching \(index.index.isWatching) users \(InotifyHub.users) listings \(index.listings)"
      )
      emitLine("names \(index.drain() == [older, first, newer] ? "in order" : "wrong")")
    #else
      throw WorkerTimeout(what: "index-fallback needs a debug build")
    #endif
  },
]
