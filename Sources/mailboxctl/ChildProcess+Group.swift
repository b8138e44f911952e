import Foundation
import Glibc

extension ChildProcess {
  /// Whether a process of its group may still run code: a member other than the exited
  /// leader's zombie, found by a scan of /proc (proc(5): in /proc/PID/stat the third field is the
  /// state, the fifth the process group; a zombie, `Z`, or dead process, `X`, runs nothing,
  /// unless threads of the zombie still run, ``mayRun(_:state:)``), and
  /// no SIGKILL sent to the group yet (a killed process runs no more code; signal(7)). False
  /// once reaped, and when /proc cannot be read (true would wait for ever). A process that left
  /// the group (setsid(2), setpgid(2)) is out of reach and not counted.
  /// - Complexity: O(processes on the machine): one open and read per process; call it only
  ///   for a handler whose message waits to go back.
  var groupMayRun: Bool {
    guard !killSent, hasExited, !isReaped else { return false }
    guard let proc = opendir("/proc") else { return false }
    defer { closedir(proc) }
    while let entry = readdir(proc) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard let member = pid_t(name), member != pid,
        let (state, group) = Self.stateAndGroup(of: member), group == pid
      else { continue }
      if Self.mayRun(member, state: state) { return true }
    }
    return false
  }

  /// Whether `process`, in `state`, may run code: in any state but zombie (`Z`) or dead (`X`),
  /// and a zombie whose other threads still run: a process whose main thread exited shows `Z`
  /// while they do (proc(5): `Threads:` in /proc/PID/status counts them; a true zombie has 1).
  private static func mayRun(_ process: pid_t, state: UInt8) -> Bool {
    if state == UInt8(ascii: "X") { return false }
    guard state == UInt8(ascii: "Z") else { return true }
    guard let status = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }),
      let threads = Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
    else { return false }
    return threads > 1
  }

  /// The state letter and process group of `process` from /proc/PID/stat (`pid (comm) S ppid
  /// pgrp …`; the command name may hold spaces and parentheses, so fields count from the last
  /// `)`); nil when it is gone or unreadable.
  private static func stateAndGroup(of process: pid_t) -> (UInt8, pid_t)? {
    let fd = open("/proc/\(process)/stat", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 512)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0, let name = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else {
      return nil
    }
    let fields = buffer[(name + 1)..<count].split(separator: UInt8(ascii: " "))
    guard fields.count > 2, let state = fields[0].first,
      let group = pid_t(String(decoding: fields[2], as: UTF8.self))
    else { return nil }
    return (state, group)
  }
}
