import AppGroupMailbox
import Foundation
import Glibc

/// Worker commands for the hardening tests (bounds, hostile input, permissions):
///
/// - `enqueue-burst CONTAINER NAMESPACE COUNT MAX POLICY GOFILE`: waits until GOFILE exists (a
///   start barrier), then enqueues COUNT integers with `maxMessages` MAX and POLICY
///   (`reject`|`discard`); prints `ok <n> full <m>`.
/// - `claim-rss CONTAINER NAMESPACE MAXPAYLOAD`: prints `rss-before <KiB>`, claims everything
///   (String messages) printing `message <text>` and acknowledging, then `rss-after <KiB>` (peak
///   resident set, getrusage(2) `ru_maxrss`).
/// - `umask-open CONTAINER NAMESPACE UMASK PERMISSIONS`: sets the umask (octal), opens the
///   mailbox with PERMISSIONS (`private`|`group`) and enqueues one message.
/// - `drain-report CONTAINER NAMESPACE`: claims and acknowledges everything (String messages),
///   printing every message, diagnostic and error (the log a careless application would write).
/// - `open-repeatedly CONTAINER NAMESPACE COUNT`: opens the mailbox COUNT times, letting each go
///   (or failing), then prints `descriptors <before> <after>` (entries of /proc/self/fd but
///   libdispatch's own: its epoll, eventfd and timerfd descriptors live as long as the process and
///   are made when the runtime first needs them, under load at any time) and the last error's
///   description, if any. `before` is counted after one open more.
let hardeningCommands: [WorkerCommand] = [
  WorkerCommand(name: "open-repeatedly") { args in
    func descriptors() -> [String] {  // /proc/self/fd (proc(5)), its own descriptor too
      let runtime = ["anon_inode:[eventpoll]", "anon_inode:[eventfd]", "anon_inode:[timerfd]"]
      let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
      // A descriptor gone before its readlink (the listing's own, or one another thread opened
      // and closed meanwhile) is none held: a leaked one stays and reads back.
      return names.compactMap { name in
        guard
          let target = try? FileManager.default.destinationOfSymbolicLink(
            atPath: "/proc/self/fd/" + name)
        else { return nil }
        return runtime.contains(target) ? nil : target
      }
    }
    var failure = ""
    func openAndLetGo() {
      let opened = Result {
        try AppGroupMailbox<String>(containerURL: URL(fileURLWithPath: args[0]), namespace: args[1])
      }
      if case .failure(let error) = opened { failure = error.localizedDescription }
    }
    openAndLetGo()
    let before = descriptors()
    for _ in 0..<Int(args[2])! { openAndLetGo() }
    let after = descriptors()
    print("descriptors \(before.count) \(after.count)")
    if before.count != after.count { print("before: \(before.sorted()) after: \(after.sorted())") }
    if !failure.isEmpty { print(failure) }
  },
  WorkerCommand(name: "enqueue-burst") { args in
    let limits = AppGroupMailboxLimits(maxMessages: Int(args[3])!)
    let mailbox = try AppGroupMailbox<Int>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1], limits: limits,
      overflowPolicy: args[4] == "discard" ? .discardOldest : .rejectNewest)
    while access(args[5], F_OK) != 0 { usleep(500) }
    var ok = 0
    var full = 0
    for value in 0..<Int(args[2])! {
      do {
        try mailbox.enqueue(value)
        ok += 1
      } catch AppGroupMailboxError.mailboxFull {
        full += 1
      }
    }
    print("ok \(ok) full \(full)")
  },
  WorkerCommand(name: "claim-rss") { args in
    print("rss-before \(peakResidentKiB())")
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      limits: AppGroupMailboxLimits(maxPayloadBytes: Int(args[2])!))
    try printAndAcknowledgeAll(mailbox)
    print("rss-after \(peakResidentKiB())")
  },
  WorkerCommand(name: "umask-open") { args in
    umask(mode_t(args[2], radix: 8)!)
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      permissions: args[3] == "group" ? .groupShared : .private)
    try mailbox.enqueue("x")
  },
  WorkerCommand(name: "drain-report") { args in
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[0]), namespace: args[1],
      diagnostic: { event in
        FileHandle.standardError.write(
          Data("diagnostic: \(event) \(String(reflecting: event))\n".utf8))
      })
    do {
      try printAndAcknowledgeAll(mailbox)
      try mailbox.performMaintenance()
    } catch {
      FileHandle.standardError.write(
        Data("error: \(error) \(String(reflecting: error)) \(error.localizedDescription)\n".utf8))
    }
  },
]

/// Claims the mailbox's messages one at a time, printing `message M` for each before
/// acknowledging it, until none is pending.
private func printAndAcknowledgeAll(_ mailbox: AppGroupMailbox<String>) throws {
  while true {
    let claims = try mailbox.claimPending(limit: 1)
    if claims.isEmpty { return }
    for claim in claims {
      print("message \(claim.message)")
      try claim.acknowledge()
    }
  }
}

/// The peak resident set size of this process in KiB (getrusage(2), `ru_maxrss`).
func peakResidentKiB() -> Int {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return usage.ru_maxrss
}
