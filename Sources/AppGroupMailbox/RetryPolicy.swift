public import Foundation

/// Capped exponential backoff with jitter for redelivering a message whose handler failed
/// (``AppGroupMailbox/RetryPolicy``; a Linux addition).
///
/// The delay before delivery `n + 1` after a failed delivery `n` is
/// `min(maximumDelay, baseDelay × multiplier^(n − 1))`, then spread by up to ± `jitter` of
/// itself, and never above `maximumDelay`. Pass it to ``AppGroupMailbox/Claim/release(retryAfter:)``.
/// Jitter keeps many consumers that failed together from retrying together (see "Exponential
/// Backoff And Jitter", AWS Architecture Blog, 2015).
public struct AppGroupMailboxRetryPolicy: Sendable, Equatable, Hashable {
  /// Seconds before the second delivery; at least 0. Default 1.
  public var baseDelay: TimeInterval
  /// Growth per failed delivery; at least 1. Default 2.
  public var multiplier: Double
  /// The longest delay in seconds; at least `baseDelay`. Default 300.
  public var maximumDelay: TimeInterval
  /// The fraction (0...1) by which a delay may be shortened or lengthened at random. Default 0.1.
  public var jitter: Double

  /// Creates a policy; out-of-range values are clamped into range (see each property).
  public init(
    baseDelay: TimeInterval = 1, multiplier: Double = 2, maximumDelay: TimeInterval = 300,
    jitter: Double = 0.1
  ) {
    self.baseDelay = baseDelay.isFinite ? max(0, baseDelay) : 0
    self.multiplier = multiplier.isFinite ? max(1, multiplier) : 1
    self.maximumDelay = maximumDelay.isFinite ? max(self.baseDelay, maximumDelay) : self.baseDelay
    self.jitter = jitter.isFinite ? min(1, max(0, jitter)) : 0
  }

  /// The delay in seconds before the next delivery, after delivery number `deliveryCount`
  /// (1 for the first) failed, without jitter. A `deliveryCount` below 1 (down to `Int.min`)
  /// counts as 1.
  public func nominalDelay(afterDelivery deliveryCount: Int) -> TimeInterval {
    let exponent = deliveryCount > 1 ? Double(deliveryCount) - 1 : 0
    let grown = baseDelay * pow(multiplier, exponent)
    return grown.isFinite ? min(maximumDelay, grown) : maximumDelay
  }

  /// The delay in seconds before the next delivery after delivery `deliveryCount` failed, with
  /// jitter drawn from `generator`.
  public func delay<G: RandomNumberGenerator>(
    afterDelivery deliveryCount: Int, using generator: inout G
  ) -> TimeInterval {
    let nominal = nominalDelay(afterDelivery: deliveryCount)
    guard jitter > 0, nominal > 0 else { return nominal }
    let spread = Double.random(in: -jitter...jitter, using: &generator)
    return min(maximumDelay, max(0, nominal * (1 + spread)))
  }

  /// The delay after delivery `deliveryCount` failed, with jitter from the system generator.
  public func delay(afterDelivery deliveryCount: Int) -> TimeInterval {
    var generator = SystemRandomNumberGenerator()
    return delay(afterDelivery: deliveryCount, using: &generator)
  }
}
