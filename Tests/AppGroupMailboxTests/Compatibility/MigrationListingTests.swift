import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// A migration lists this mailbox's areas a fixed number of times, however many old messages it
/// imports (``MigrationPresence``): a duplicate check per message made it quadratic.
@Suite struct MigrationListingTests {
  /// Old messages `count` of them, plus one the mailbox already holds (the same id, payload and
  /// date: a rerun) and one whose id it holds with another payload (a conflict); migrates them
  /// in this process
  /// and returns how many times the migration listed `pending/`, `claimed/`, `delayed/` or
  /// `quarantine/` (an open of `.` in one of them).
  static func areaListings(importing count: Int) throws -> Int {
    let container = try TemporaryContainer()
    let mailbox = try container.rawMailbox()
    let same = UUID(uuidString: "50000000-0000-4000-8000-000000000001")!
    let other = UUID(uuidString: "50000000-0000-4000-8000-000000000002")!
    let seconds = Date().timeIntervalSinceReferenceDate.rounded(.down) - 60
    try mailbox.enqueue(
      Data(#"{"w":"same"}"#.utf8), id: same,
      enqueuedAt: Date(timeIntervalSinceReferenceDate: seconds))
    try mailbox.enqueue(Data(#"{"w":"new"}"#.utf8), id: other)
    try MigrationHazardTests.writeOld(
      container, "pending-00000000000000000001-S.json", id: same, seconds: seconds,
      message: #"{"w":"same"}"#)
    try MigrationHazardTests.writeOld(
      container, "pending-00000000000000000002-O.json", id: other, message: #"{"w":"old"}"#)
    for number in 0..<count {
      try MigrationHazardTests.writeOld(
        container, String(format: "pending-%020d-M.json", number + 10), id: UUID(),
        message: "{\"n\":\(number)}")
    }
    let areas = mailbox.spool.directories
    let descriptors = [areas.pending, areas.claimed, areas.delayed, areas.quarantine]
    let recorder = SystemCallRecording.Recorder()
    let report = try SystemCallRecording.recording(recorder) {
      try mailbox.migrateLegacySpool()
    }
    #expect(
      report
        == LegacyMigrationReport(imported: count, alreadyPresent: 1, expired: 0, quarantined: 1))
    #expect(try MigrationHazardTests.oldNames(container).isEmpty)
    return recorder.all.filter {
      $0.name == "openat" && $0.path == "." && descriptors.contains($0.descriptor)
    }.count
  }

  @Test func `A migration lists the mailbox's areas as often for 60 old messages as for 5`()
    throws
  {
    let few = try Self.areaListings(importing: 5)
    let many = try Self.areaListings(importing: 60)
    #expect(few == many, "\(few) listings for 5 old messages, \(many) for 60")
  }
}
