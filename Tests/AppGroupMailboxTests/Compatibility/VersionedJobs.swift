import Foundation

@testable import AppGroupMailbox

/// Payload version 1 of a job (the worker's `VersionOneJob`): the type does not adopt
/// `AppGroupMailboxVersionedMessage`.
struct JobOne: Codable, Sendable, Equatable {
  var number: Int
}

/// Payload version 2 of the same job (the worker's `VersionTwoJob`).
struct JobTwo: Codable, Sendable, Equatable, AppGroupMailboxVersionedMessage {
  static let payloadVersion = 2
  var number: Int
  var label: String

  /// The migration from `JobOne`'s JSON: the number, labelled "from 1".
  @Sendable static func fromOne(_ data: Data) throws -> JobTwo {
    JobTwo(number: try JSONDecoder().decode(JobOne.self, from: data).number, label: "from 1")
  }
}
