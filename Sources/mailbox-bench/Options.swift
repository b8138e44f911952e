import Foundation

/// Command-line options of `mailbox-bench`.
struct BenchOptions {
  /// `--quick`: fewer operations per round, more rounds; a few minutes on a loaded machine.
  var quick = false
  /// `--json`: one JSON object per measurement on stdout instead of the table.
  var json = false
  /// `--peers`: also run the peers (Python's `dirq`, `mailbox.Maildir`, `persist-queue` and a
  /// SQLite table) when present.
  var peers = false
  /// `--rounds N`: alternating baseline/library rounds per measure (median reported).
  var rounds: Int?
  /// `--dir PATH`: where fresh run directories are made (default: a new directory in /var/tmp,
  /// which must be on the filesystem being measured).
  var directory: String?
  /// `--cache PATH`: where the deep spools of the depth measures are kept between runs.
  var cache: String?
  /// `--only NAME[,NAME]`: run only the named groups (``groups``); a name not among them is a
  /// usage error.
  var only: Set<String>?
  /// `--compare A B`: compare the ratios of two `--json` runs instead of measuring.
  var compare: (String, String)?
  /// `--python PATH`: the interpreter for `--peers` (default `.venv-peers/bin/python`, then
  /// `python3`).
  var python: String?

  /// The measure groups `--only` may name.
  static let groups = [
    "throughput", "depth", "batch", "concurrency", "wake", "memory", "drain", "bridge", "peers",
  ]

  static let usage = """
    usage: mailbox-bench [--quick] [--json] [--peers] [--rounds N] [--dir PATH] [--cache PATH]
                         [--only GROUP[,GROUP...]] [--python PATH]
           mailbox-bench --compare RUN1.jsonl RUN2.jsonl
    groups: \(groups.joined(separator: ", "))
    """

  /// Parses `arguments` (without the program name); nil on a usage error.
  init?(arguments: [String]) {
    var index = 0
    func value() -> String? {
      index += 1
      return index < arguments.count ? arguments[index] : nil
    }
    while index < arguments.count {
      switch arguments[index] {
      case "--quick": quick = true
      case "--json": json = true
      case "--peers": peers = true
      case "--rounds":
        guard let text = value(), let count = Int(text), count > 0 else { return nil }
        rounds = count
      case "--dir":
        guard let text = value() else { return nil }
        directory = text
      case "--cache":
        guard let text = value() else { return nil }
        cache = text
      case "--only":
        guard let text = value() else { return nil }
        let names = Set(text.split(separator: ",").map(String.init))
        guard !names.isEmpty, names.isSubset(of: Self.groups) else { return nil }
        only = names
      case "--compare":
        guard let first = value(), let second = value() else { return nil }
        compare = (first, second)
      case "--python":
        guard let text = value() else { return nil }
        python = text
      default: return nil
      }
      index += 1
    }
  }

  /// Whether the group `name` runs: `peers` only with `--peers`, `drain` and `bridge` (they
  /// start Python handlers, `bridge` a nats-server too, and take minutes on a busy machine) only
  /// when `--only` names them.
  func runs(_ name: String) -> Bool {
    if let only { return only.contains(name) }
    return name != "drain" && name != "bridge" && (name != "peers" || peers)
  }

  /// The deep-spool cache: `--cache`, else `mailbox-bench-cache` beside the run directories.
  var cacheDirectory: String { cache ?? ((directory ?? "/var/tmp") + "/mailbox-bench-cache") }

  /// Rounds per measure: 5 by default, 7 with `--quick` (more rounds of fewer operations: the
  /// median of seven rounds' ratios moves less between runs than that of three longer ones).
  var roundCount: Int { rounds ?? (quick ? 7 : 5) }
}
