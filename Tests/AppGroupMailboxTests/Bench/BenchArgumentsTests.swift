import Testing

@testable import mailbox_bench

/// A worker role given too few arguments or a word where a number belongs ends with a set-up
/// error naming the role and the argument, never a trap (`mailbox-bench _profile` with no
/// arguments used to die with an illegal instruction).
@Suite struct BenchArgumentsTests {
  @Test(arguments: [
    ["_profile"], ["_profile", "lib", "consume", "/nonexistent", "relaxed", "ten", "256"],
    ["_profile", "lib", "eat", "/nonexistent", "relaxed", "10", "256"], ["_produce-lib", "/x"],
    ["_wake-c", "/x", "many", "/y"], ["_peak-rss", "/x", "/y", "/z"],
  ])
  func `A worker role with missing or wrong arguments throws instead of trapping`(
    _ arguments: [String]
  ) {
    #expect(throws: BenchError.self) { try Workers.run(arguments) }
  }

  @Test func `Role arguments name what is wrong`() throws {
    let arguments = RoleArguments(role: "_x", values: ["7", "seven"])
    #expect(try arguments.int(0) == 7)
    #expect(try arguments.from(1) == ["seven"])
    #expect(throws: BenchError.self) { try arguments.int(1) }
    #expect(throws: BenchError.self) { try arguments[2] }
    #expect(throws: BenchError.self) { try arguments.from(2) }
  }
}
