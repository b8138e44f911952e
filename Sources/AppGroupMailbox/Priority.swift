/// The priority levels of messages (a Linux addition): ``lowest`` (0) to ``highest`` (9),
/// ``default`` (5) when an enqueue gives none.
///
/// Claims take the highest level first and, within a level, keep FIFO order (`enqueuedAt`,
/// then insertion order), across processes. A message keeps its level for its whole life: a
/// release, a release with a delay, the recovery of an abandoned claim and a delayed enqueue
/// all return it to its own level. The level is stored in the message's file name (docs/FORMAT.md,
/// "Names"), so ordering by it costs no file read and no extra system call.
public enum AppGroupMailboxPriority {
  /// The lowest level, 0: claimed after every other level.
  public static let lowest = 0
  /// The highest level, 9: claimed before every other level.
  public static let highest = 9
  /// The level of a message enqueued without one, 5; the level of every message written before
  /// levels existed.
  public static let `default` = 5
  /// Every level, ``lowest`` through ``highest``.
  public static let levels: ClosedRange<Int> = lowest...highest
}
