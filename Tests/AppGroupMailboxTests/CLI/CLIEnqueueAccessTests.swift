import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Found by a review of `enqueue --dry-run` and `--no-create`: a mailbox this user may read but
/// not write passed the dry run (which only reads), so the NATS bridge started and retried every
/// message for ever; and `--no-create` made a mailbox again in a namespace directory whose
/// state and settings files were gone (one being deleted), with the default bounds.
extension CLIPermissionTests {
  /// A container holding the mailbox `jobs`, its modes given `chmod -R mode` (for others).
  func openedToOthers(_ mode: String) throws -> TemporaryContainer {
    let container = try TemporaryContainer()
    _ = try container.rawMailbox()
    let opened = try Processes.start(
      URL(fileURLWithPath: "/bin/chmod"), ["-R", mode, container.url.path]
    ).finish(deadline: 60)
    #expect(opened.status == 0, "\(opened.stderr)")
    return container
  }

  @Test func `A dry run refuses a mailbox this user may read but not enqueue into`() throws {
    let container = try openedToOthers("o+rX")
    let location = container.arguments()
    let path = container.url.path + "/AppGroupMailbox/jobs"
    for extra in [["--dry-run"], []] {
      let result = try run(["enqueue"] + location + ["--no-create", "--data", "1"] + extra)
      #expect(result.status == 69, "\(extra): \(result.stderr)")
    }
    let dry = try run(["enqueue"] + location + ["--no-create", "--data", "1", "--dry-run"])
    #expect(
      dry.stderr
        == "mailboxctl: error: enqueue: cannot enqueue into the mailbox at \(path): state: "
        + "Permission denied (errno 13)\n")
    #expect(try container.rawMailbox().inspector.counts().depth == 0)
  }
}

extension CLIPermissionTests {
  /// Found by the third review: the dry run required `delayed/` to be writable for every
  /// message (the enqueue needs it only for a delayed one), and said 69 where the enqueue says
  /// 74 (`tmp/` or `pending/` not writable).
  @Test(arguments: [
    ("delayed", [String](), 0), ("delayed", ["--delay", "5"], 74), ("tmp", [], 74),
  ])
  func `A dry run gives the enqueue's exit status for an area this user may not write`(
    area: String, options: [String], status: Int32
  ) throws {
    let container = try openedToOthers("o+rwX")
    let location = container.arguments()
    #expect(chmod(container.area(area).path, 0o755) == 0)
    let dry = try run(["enqueue"] + location + ["--data", "1", "--dry-run"] + options)
    let real = try run(["enqueue"] + location + ["--data", "1"] + options)
    #expect(dry.status == status, "\(dry.stderr)")
    #expect(real.status == status, "\(real.stderr)")
  }
}

@Suite struct CLIEnqueueNoCreateTests {
  @Test func `--no-create does not make again a mailbox whose state and settings are gone`()
    throws
  {
    let container = try TemporaryContainer()
    let location = container.arguments()
    #expect(try Mailboxctl.run(["create"] + location).status == 0)
    for name in ["state", "settings"] {
      try FileManager.default.removeItem(at: container.area(name))
    }
    let path = container.url.path + "/AppGroupMailbox/jobs"
    for extra in [[], ["--dry-run"]] {
      let refused = try Mailboxctl.run(
        ["enqueue"] + location + ["--no-create", "--data", "1"] + extra)
      #expect(refused.status == 66, "\(extra)")
      #expect(
        refused.stderr
          == "mailboxctl: error: enqueue: no such mailbox: \(path) holds neither a state nor a "
          + "settings file (being deleted, or never made: 'mailboxctl create' makes it)\n")
    }
    for name in ["state", "settings"] {
      #expect(!FileManager.default.fileExists(atPath: container.area(name).path), "\(name)")
    }
  }
}
