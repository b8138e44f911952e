/// The arguments of a worker role (``Workers``, ``ProfileRole``), read without trapping: a
/// missing argument or one that is not a number ends the role with ``BenchError/setup(_:)``
/// naming the role and the position, never a crash.
struct RoleArguments {
  /// The role, for error messages.
  let role: String
  /// The arguments after the role's name.
  let values: [String]

  /// The argument at `index`. - Throws: ``BenchError/setup(_:)`` when there is none.
  subscript(index: Int) -> String {
    get throws {
      guard values.indices.contains(index) else {
        throw BenchError.setup("\(role): argument \(index + 1) is missing")
      }
      return values[index]
    }
  }

  /// The arguments from `index` on (at least one). - Throws: as ``subscript(_:)``.
  func from(_ index: Int) throws -> [String] {
    _ = try self[index]
    return Array(values[index...])
  }

  /// The argument at `index` as a whole number. - Throws: ``BenchError/setup(_:)``.
  func int(_ index: Int) throws -> Int {
    guard let number = Int(try self[index]) else {
      throw BenchError.setup("\(role): argument \(index + 1) is not a whole number")
    }
    return number
  }

  /// The argument at `index` as a 64-bit whole number. - Throws: ``BenchError/setup(_:)``.
  func int64(_ index: Int) throws -> Int64 {
    Int64(try int(index))
  }
}
