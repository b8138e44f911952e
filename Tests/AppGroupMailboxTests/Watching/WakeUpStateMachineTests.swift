import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

@Suite struct WakeUpStateMachineTests {
  typealias Machine = WakeUpStateMachine

  @Test func `Arming asks for a scan, and a scan that finds something signals once`() {
    var machine = Machine()
    #expect(machine.handle(.changed) == .idle)
    #expect(machine.handle(.armed) == .scan)
    #expect(machine.mode == .watching)
    #expect(machine.handle(.scanned(found: true)) == .rescan)
    #expect(machine.isSignalled)
    #expect(machine.take() == true)
    #expect(machine.take() == false)
  }

  @Test func `An empty first scan leaves the watcher idle`() {
    var machine = Machine()
    _ = machine.handle(.armed)
    #expect(machine.handle(.scanned(found: false)) == .idle)
    #expect(machine.take() == false)
    #expect(machine.signalCount == 0)
  }

  @Test func `Changes and overflows before a take coalesce into one wake-up`() {
    var machine = Machine()
    _ = machine.handle(.armed)
    #expect(machine.handle(.changed) == .rescan)
    #expect(machine.handle(.changed) == .rescan)
    #expect(machine.handle(.overflow) == .rescan)
    #expect(machine.signalCount == 1)
    #expect(machine.take() == true)
    #expect(machine.take() == false)
    #expect(machine.handle(.changed) == .rescan)
    #expect(machine.signalCount == 2)
  }

  @Test func `A lost watch re-arms once, then signals a rescan`() {
    var machine = Machine()
    _ = machine.handle(.armed)
    #expect(machine.handle(.watchLost) == .rearm)
    #expect(machine.mode == .rearming)
    #expect(machine.handle(.watchLost) == .idle)
    #expect(machine.handle(.rearmed) == .rescan)
    #expect(machine.mode == .watching)
    #expect(machine.take() == true)
  }

  @Test func `A directory that cannot be followed finishes the watcher`() {
    var machine = Machine()
    _ = machine.handle(.armed)
    _ = machine.handle(.watchLost)
    #expect(machine.handle(.gone) == .finish(.directoryRemoved))
    #expect(machine.mode == .finished(.directoryRemoved))
    #expect(machine.handle(.changed) == .idle)
    #expect(machine.handle(.close) == .idle)
  }

  @Test func `An inotify limit at start or on re-arm switches to polling`() {
    var start = Machine()
    #expect(start.handle(.armFailed) == .startPolling)
    #expect(start.mode == .polling)
    #expect(start.handle(.tick) == .scan)
    #expect(start.handle(.scanned(found: true)) == .rescan)
    #expect(start.handle(.watchLost) == .idle)

    var rearm = Machine()
    _ = rearm.handle(.armed)
    _ = rearm.handle(.watchLost)
    #expect(rearm.handle(.rearmHitLimit) == .startPolling)
    #expect(rearm.mode == .polling)
  }

  @Test func `Ticks are ignored unless polling, and close finishes from any mode`() {
    var machine = Machine()
    _ = machine.handle(.armed)
    #expect(machine.handle(.tick) == .idle)
    #expect(machine.handle(.close) == .finish(.closed))
    #expect(machine.isFinished)
    #expect(machine.handle(.armed) == .idle)
  }

  @Test func `Inotify records are parsed from unaligned headers with padded names`() {
    var bytes: [UInt8] = []
    func append(_ watch: Int32, _ mask: UInt32, _ cookie: UInt32, _ name: String?, pad: Int) {
      var nameBytes = Array((name ?? "").utf8)
      if name != nil { nameBytes += [UInt8](repeating: 0, count: pad) }
      withUnsafeBytes(of: watch.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: mask.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: cookie.littleEndian) { bytes += $0 }
      withUnsafeBytes(of: UInt32(nameBytes.count).littleEndian) { bytes += $0 }
      bytes += nameBytes
    }
    append(1, UInt32(IN_MOVED_TO), 7, "a.msg", pad: 3)
    append(-1, UInt32(IN_Q_OVERFLOW), 0, nil, pad: 0)
    append(2, UInt32(IN_DELETE_SELF), 0, nil, pad: 0)
    append(1, UInt32(IN_CREATE), 0, "b", pad: 15)
    let truncated = bytes + [1, 0, 0, 0, 2]
    // Start one byte in, so every header is unaligned.
    let shifted = [0xFF] + truncated
    let events = shifted.withUnsafeBytes { raw in
      InotifyEventParser.parse(UnsafeRawBufferPointer(rebasing: raw[1...]))
    }
    #expect(
      events == [
        InotifyEvent(watch: 1, mask: UInt32(IN_MOVED_TO), cookie: 7, name: "a.msg"),
        InotifyEvent(watch: -1, mask: UInt32(IN_Q_OVERFLOW), cookie: 0, name: nil),
        InotifyEvent(watch: 2, mask: UInt32(IN_DELETE_SELF), cookie: 0, name: nil),
        InotifyEvent(watch: 1, mask: UInt32(IN_CREATE), cookie: 0, name: "b"),
      ])
  }

  @Test func `Notification names map one-to-one onto safe file names`() {
    #expect(NotificationFile.encode("com.example.jobs") == "com.example.jobs")
    #expect(NotificationFile.encode("a/b") == "a%2Fb")
    #expect(NotificationFile.encode("..") == "%2E.")
    #expect(NotificationFile.encode(".x") == "%2Ex")
    #expect(NotificationFile.encode("100%") == "100%25")
    #expect(NotificationFile.encode("é") == "%C3%A9")
    #expect(NotificationFile.encode("") == nil)
    #expect(NotificationFile.encode(String(repeating: "a", count: 255))?.utf8.count == 255)
    #expect(NotificationFile.encode(String(repeating: "a", count: 256)) == nil)
    #expect(NotificationFile.encode(String(repeating: "/", count: 86)) == nil)
  }
}
