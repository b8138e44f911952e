@testable import AppGroupMailbox

/// Runs `body` with the fault-injection `rules` applying to the system calls this task makes
/// (see ``FaultInjection``); returns the error `body` threw (nil when it returned) and the
/// rules that never fired.
func thrownError(under rules: [FaultInjection.Rule], _ body: () throws -> Void) -> (
  thrown: (any Error)?, unfired: [FaultInjection.Rule]
) {
  FaultInjection.withRules(rules) { () -> (any Error)? in
    do {
      try body()
      return nil
    } catch {
      return error
    }
  }
}
