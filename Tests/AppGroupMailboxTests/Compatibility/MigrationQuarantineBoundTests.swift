import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// `mailboxctl migrate` never deletes an old file through the quarantine bound, and a file too
/// large to read stops it rather than going to quarantine.
@Suite struct MigrationQuarantineBoundTests {
  @Test func `Migrate stops before any change when quarantine cannot take the old files`() throws {
    let container = try TemporaryContainer()
    let created = try Mailboxctl.run(
      ["create"] + container.arguments() + ["--max-quarantined-files", "20"])
    #expect(created.status == 0, "\(created.stderr)")
    let directory = MigrationHazardTests.namespace(container)
    for index in 0..<30 {
      try Data("q\(index)".utf8).write(
        to: directory.appendingPathComponent("quarantine-\(1000 + index)-x.bin"))
    }
    try MigrationHazardTests.writeOld(
      container, "pending-00000000000000000001-A.json", message: #"{"w":"A"}"#)
    let refused = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(refused.status == 65)
    #expect(refused.stderr.contains("30 old files would go to quarantine/"), "\(refused.stderr)")
    #expect(refused.stderr.contains("--max-quarantined-files 30'"), "\(refused.stderr)")
    #expect(try MigrationHazardTests.oldNames(container).count == 31)
    #expect(container.names("quarantine").isEmpty)
    #expect(container.names("pending").isEmpty)
    let raised = try Mailboxctl.run(
      ["config"] + container.arguments() + ["--max-quarantined-files", "30"])
    #expect(raised.status == 0, "\(raised.stderr)")
    let migrated = try Mailboxctl.run(["migrate"] + container.arguments() + ["--json"])
    #expect(migrated.status == 0, "\(migrated.stderr)")
    #expect(
      migrated.stdout
        == "{\"imported\":1,\"alreadyPresent\":0,\"expired\":0,\"quarantined\":30}\n")
    let kept = try MigrationHazardTests.quarantinedBytes(container, .foreign)
    #expect(Set(kept) == Set((0..<30).map { Data("q\($0)".utf8) }))
  }

  @Test func `An old file too large to read stops migrate and stays where it is`() throws {
    let container = try TemporaryContainer()
    try MigrationHazardTests.writeOld(
      container, "pending-00000000000000000001-A.json", message: #"{"w":"A"}"#)
    let big = MigrationHazardTests.namespace(container)
      .appendingPathComponent("pending-00000000000000000002-B.json")
    #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
    // Sparse: larger than the 64 MiB ceiling without writing it.
    #expect(truncate(big.path, off_t(AppGroupMailboxLimits.payloadCeiling + 1)) == 0)
    let refused = try Mailboxctl.run(["migrate"] + container.arguments())
    #expect(refused.status == 65, "\(refused.stderr)")
    #expect(try MigrationHazardTests.oldNames(container).count == 2)
    #expect(container.names("quarantine").isEmpty)
    #expect(container.names("pending").isEmpty)
  }
}
