/// What every group of measurements is given: the command line, the scratch directories and
/// the report the rows go to.
struct BenchContext {
  let options: BenchOptions
  let workspace: Workspace
  let report: Report
}

/// A group of measurements (throughput, depth, batch, ...), run with one ``BenchContext``.
protocol MeasureGroup {
  var context: BenchContext { get }
}

extension MeasureGroup {
  var options: BenchOptions { context.options }
  var workspace: Workspace { context.workspace }
  var report: Report { context.report }
}
