import AppGroupMailbox

/// One option a subcommand accepts: the parser and the help text both read this table.
struct OptionSpec: Sendable {
  /// How an option takes its value.
  enum Kind: Sendable, Equatable {
    /// Present or absent (`--json`).
    case flag
    /// One value, as `--limit 5` or `--limit=5`; the placeholder is shown in help.
    case value(String)
    /// Takes every later argument verbatim (`--exec CMD [ARG...]`); the placeholder is shown.
    case rest(String)
  }

  var name: String
  var kind: Kind
  var help: String
  /// May be given more than once (the values are kept in order).
  var repeatable = false
  /// Left out of `--help` (internal options).
  var hidden = false
}

/// A subcommand's argument grammar: its options and how many positional arguments it takes.
struct CommandSpec: Sendable {
  var name: String
  var summary: String
  /// The positional part of the usage line, for example `ID` or `list|show|requeue|purge ...`.
  var positionalUsage: String = ""
  var minPositionals = 0
  var maxPositionals = 0
  var options: [OptionSpec]
  /// Paragraphs printed after the options in `--help`.
  var details: String = ""
  var hidden = false
}

/// A wrong command line: printed with a hint to `--help`, exit status 64 (EX_USAGE).
struct UsageError: Error, Equatable, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// The result of parsing: flags seen, values by option name, and positional arguments.
struct ParsedArguments: Equatable, Sendable {
  var flags: Set<String> = []
  var values: [String: [String]] = [:]
  var positionals: [String] = []
  /// True when `--help` or `-h` was given (before any `rest` option).
  var wantsHelp = false

  func flag(_ name: String) -> Bool { flags.contains(name) }

  /// The last value given for `name`.
  func value(_ name: String) -> String? { values[name]?.last }

  /// Every value given for `name`, in order.
  func all(_ name: String) -> [String] { values[name] ?? [] }

  /// The value of `name` as an integer within `range`, or nil when absent.
  func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
    guard let text = value(name) else { return nil }
    guard let number = Int(text), range.contains(number) else {
      throw UsageError(
        message: "\(name) needs an integer from \(range.lowerBound) to \(range.upperBound), "
          + "not '\(text)'")
    }
    return number
  }

  /// The value of `name` as seconds (a decimal number greater than 0 and at most
  /// ``secondsCeiling(_:)``), or nil when absent.
  func seconds(_ name: String) throws(UsageError) -> Double? {
    let ceiling = Self.secondsCeiling(name)
    guard let text = value(name) else { return nil }
    guard let number = Self.decimal(text), number > 0, number.isFinite, number <= ceiling else {
      throw UsageError(
        message: "\(name) needs a number of seconds greater than 0 and at most \(Int(ceiling)), "
          + "not '\(text)'")
    }
    // The mailbox's times count microseconds: a shorter span would be stored as 0.
    guard number >= AppGroupMailboxLimits.resolution else {
      throw UsageError(
        message: "\(name) needs at least 0.000001 seconds (1 µs, the mailbox's resolution), "
          + "not '\(text)'")
    }
    return number
  }

  /// `text` as a decimal number (`1.5`, `1e3`, `-2`), or nil: `Double(_:)` also reads
  /// hexadecimal (`0x10`, `0x1p3`), `inf` and `nan`, which the options do not take.
  static func decimal(_ text: String) -> Double? {
    guard text.utf8.allSatisfy({ Array("0123456789.eE+-".utf8).contains($0) }) else {
      return nil
    }
    return Double(text)
  }

  /// The largest value of the seconds option `name`: `--claim-timeout` the library's
  /// ``AppGroupMailboxLimits/claimTimeoutCeiling`` (366 days), any other 10^9 (about 31 years).
  /// One table, so an early check of an option (a token command checks its options before it
  /// looks the claim up) names the same bound as the check where the value is used.
  static func secondsCeiling(_ name: String) -> Double {
    name == "--claim-timeout" ? AppGroupMailboxLimits.claimTimeoutCeiling : 1e9
  }
}

/// A small table-driven parser: `--name value`, `--name=value`, flags, `--` ending options, and
/// `rest` options that take everything after them.
enum ArgumentParser {
  static func parse(_ arguments: [String], spec: CommandSpec) throws(UsageError)
    -> ParsedArguments
  {
    var result = ParsedArguments()
    var index = 0
    var optionsEnded = false
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
        result.positionals.append(argument)
        continue
      }
      if argument == "--" {
        optionsEnded = true
        continue
      }
      if argument == "--help" || argument == "-h" {
        result.wantsHelp = true
        continue
      }
      var name = argument
      var inline: String?
      if let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        inline = String(argument[argument.index(after: equals)...])
      }
      guard let option = spec.options.first(where: { $0.name == name }) else {
        throw UsageError(message: "unknown option '\(name)'")
      }
      if !option.repeatable, result.flags.contains(name) || result.values[name] != nil {
        throw UsageError(message: "\(name) given more than once")
      }
      switch option.kind {
      case .flag:
        guard inline == nil else { throw UsageError(message: "\(name) takes no value") }
        result.flags.insert(name)
      case .value(let placeholder):
        let value: String
        if let inline {
          value = inline
        } else {
          // A value is never taken from the next option (C26): one that begins with '-' must
          // be given as --name=value.
          guard index < arguments.count, !isOption(arguments[index]) else {
            throw UsageError(
              message: "\(name) needs a value (\(name) \(placeholder); write "
                + "\(name)=\(placeholder) for a value that begins with '-')")
          }
          value = arguments[index]
          index += 1
        }
        result.values[name, default: []].append(value)
      case .rest(let placeholder):
        var rest = inline.map { [$0] } ?? []
        rest += arguments[index...]
        index = arguments.count
        guard !rest.isEmpty else {
          throw UsageError(message: "\(name) needs \(placeholder)")
        }
        result.values[name] = rest
      }
    }
    if result.wantsHelp { return result }
    if result.positionals.count < spec.minPositionals {
      let what = spec.positionalUsage.isEmpty ? "an argument" : spec.positionalUsage
      throw UsageError(message: "missing \(what)")
    }
    if result.positionals.count > spec.maxPositionals {
      let extra = result.positionals[spec.maxPositionals]
      // A message given as an argument (`enqueue '{"a":1}'`): say where it goes.
      let takesData = spec.options.contains { $0.name == "--data" }
      throw UsageError(
        message: "unexpected argument '\(extra)'"
          + (takesData ? " (messages come from --data JSON or standard input: < FILE)" : ""))
    }
    return result
  }

  /// Whether `argument` looks like an option rather than a value: it begins with `-` and is
  /// neither `-` alone (standard input or output) nor a number (`-1` gets a range error).
  static func isOption(_ argument: String) -> Bool {
    argument.hasPrefix("-") && argument != "-" && Double(argument) == nil
  }

  /// The `--help` text of `spec`, options in table order, wrapped help beside each.
  static func help(for spec: CommandSpec) -> String {
    var usage = "usage: mailboxctl \(spec.name) [options]"
    if !spec.positionalUsage.isEmpty { usage += " \(spec.positionalUsage)" }
    var lines = [usage, "", spec.summary, "", "options:"]
    let visible = spec.options.filter { !$0.hidden }
    let labels = visible.map { option -> String in
      switch option.kind {
      case .flag: option.name
      case .value(let placeholder): "\(option.name) \(placeholder)"
      case .rest(let placeholder): "\(option.name) \(placeholder)"
      }
    }
    let width = min(30, (labels.map(\.count).max() ?? 0) + 3)
    for (option, label) in zip(visible, labels) {
      lines.append(row(label, option.help, width: width))
    }
    lines.append(row("-h, --help", "Show this help.", width: width))
    if !spec.details.isEmpty { lines += ["", spec.details] }
    return lines.joined(separator: "\n") + "\n"
  }

  private static func row(_ label: String, _ help: String, width: Int) -> String {
    let padded = "  " + label
    if label.count + 3 > width {
      return padded + "\n" + String(repeating: " ", count: width + 2) + help
    }
    return padded + String(repeating: " ", count: width + 2 - padded.count) + help
  }
}

extension Subcommand {
  /// A subcommand that takes no positional arguments: its name, its one-line summary, its
  /// options, the text `--help` prints after them, and what it runs.
  init(
    name: String, summary: String, options: [OptionSpec], details: String,
    run: @escaping @Sendable (ParsedArguments) throws -> ExitStatus
  ) {
    self.init(
      spec: CommandSpec(name: name, summary: summary, options: options, details: details),
      run: run)
  }
}

extension OptionSpec {
  /// An option that is present or absent, as `--json`.
  static func flag(_ name: String, _ help: String) -> OptionSpec {
    OptionSpec(name: name, kind: .flag, help: help)
  }

  /// An option with one value, shown in help as `name PLACEHOLDER`.
  static func value(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
    OptionSpec(name: name, kind: .value(placeholder), help: help)
  }

  /// An option that takes every later argument verbatim; it must come last.
  static func rest(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
    OptionSpec(name: name, kind: .rest(placeholder), help: help)
  }
}
