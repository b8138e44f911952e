@_spi(Testing) import AppGroupMailbox
import Foundation

/// The operations the crash-torture test stops at every mutating system call.
enum TortureOperation: String, CaseIterable {
  case enqueue, enqueueWithID, claim, acknowledge, release, releaseWithDelay, renew, recovery,
    quarantine, discardOldest, promotion, batchEnqueue, requeue, purge

  /// The id `enqueueWithID` imports.
  static let importedID = UUID(uuidString: "00000000-0000-4000-8000-0000000000c0")!

  /// The limits both the worker and the checking test use.
  var limits: AppGroupMailboxLimits {
    AppGroupMailboxLimits(
      maxMessages: self == .discardOldest ? 2 : 1_000, messageLifetime: 86_400 * 3_650,
      claimTimeout: 60)
  }

  var overflowPolicy: AppGroupMailboxOverflowPolicy {
    self == .discardOldest ? .discardOldest : .rejectNewest
  }
}

/// `torture OPERATION CONTAINER K [fallback]`: sets up, arms the crash point after K mutating
/// system calls, runs the operation once, prints `done`. A crash ends the process with status
/// 86. With `fallback`, every renameat2(2) fails with EINVAL first, so moves take the
/// link-then-unlink path.
let tortureCommands: [WorkerCommand] = [
  WorkerCommand(name: "torture") { args in
    guard let operation = TortureOperation(rawValue: args[0]), let k = Int(args[2]) else {
      throw CocoaError(.featureUnsupported)
    }
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[1]), namespace: "jobs", limits: operation.limits,
      overflowPolicy: operation.overflowPolicy)
    if args.count > 3, args[3] == "fallback" { CrashPoint.forceRenameFallback() }
    let quarantined = URL(fileURLWithPath: args[1]).appendingPathComponent(
      "AppGroupMailbox/jobs/quarantine")
    switch operation {
    case .enqueue, .discardOldest:
      CrashPoint.arm(afterMutations: k)
      try mailbox.enqueue("C")
    case .enqueueWithID:
      CrashPoint.arm(afterMutations: k)
      try mailbox.enqueue("C", id: TortureOperation.importedID)
    case .claim:
      CrashPoint.arm(afterMutations: k)
      _ = try mailbox.claimPending(limit: 2)
    case .acknowledge, .release, .releaseWithDelay, .renew:
      guard let claim = try mailbox.claimPending(limit: 1).first else {
        throw CocoaError(.fileNoSuchFile)
      }
      CrashPoint.arm(afterMutations: k)
      switch operation {
      case .acknowledge: try claim.acknowledge()
      case .release: try claim.release()
      case .releaseWithDelay: try claim.release(retryAfter: 5)
      default: try claim.renew()
      }
    case .recovery:
      CrashPoint.arm(afterMutations: k)
      try mailbox.performMaintenance()
    case .quarantine:
      CrashPoint.arm(afterMutations: k)
      _ = try mailbox.claimPending()
    case .promotion:
      CrashPoint.arm(afterMutations: k)
      _ = try mailbox.wait(timeout: 0)  // promotes what is due
    case .batchEnqueue:
      CrashPoint.arm(afterMutations: k)
      _ = try mailbox.enqueue(contentsOf: ["C", "E"])
    case .requeue, .purge:
      let names = try FileManager.default.contentsOfDirectory(atPath: quarantined.path)
      guard let name = names.first else { throw CocoaError(.fileNoSuchFile) }
      CrashPoint.arm(afterMutations: k)
      if operation == .requeue {
        _ = try mailbox.inspector.requeueQuarantined(name)
      } else {
        _ = try mailbox.inspector.purgeQuarantined(name)
      }
    }
    CrashPoint.disarm()
    print("done")
  }
]
