@_spi(Testing) import AppGroupMailbox
import Foundation

/// The operations the crash-torture test stops at every mutating system call.
enum TortureOperation: String, CaseIterable {
  case enqueue, enqueueWithID, claim, acknowledge, release, releaseWithDelay, renew, recovery,
    quarantine, discardOldest

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

/// `torture OPERATION CONTAINER K`: sets up, arms the crash point after K mutating system calls,
/// runs the operation once, prints `done`. A crash ends the process with status 86.
let tortureCommands: [WorkerCommand] = [
  WorkerCommand(name: "torture") { args in
    guard let operation = TortureOperation(rawValue: args[0]), let k = Int(args[2]) else {
      throw CocoaError(.featureUnsupported)
    }
    let mailbox = try AppGroupMailbox<String>(
      containerURL: URL(fileURLWithPath: args[1]), namespace: "jobs", limits: operation.limits,
      overflowPolicy: operation.overflowPolicy)
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
    }
    CrashPoint.disarm()
    print("done")
  }
]
