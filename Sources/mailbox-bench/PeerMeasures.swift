import Foundation

/// Python's `dirq` (QueueSimple: add, lock, get, remove) and `mailbox.Maildir` (add, get_bytes,
/// remove; Maildir has no claim step) on the same workload as the relaxed C baseline, 256-byte
/// messages. Neither flushes, so they are compared with the relaxed C runs, alternating.
///
/// Install: `python3 -m venv .venv-peers && .venv-peers/bin/pip install dirq` (the benchmark
/// looks for `.venv-peers/bin/python` in the working directory, else `python3`; `--python`
/// overrides). `mailbox` is in Python's standard library.
struct PeerMeasures: MeasureGroup {
  let context: BenchContext

  static let size = 256

  static let script = #"""
    import json, sys, time
    kind, path, count, size, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    data = b"x" * size
    now = time.perf_counter_ns
    result = {}
    def time_adds(queue):
        start = now()
        for _ in range(count):
            queue.add(data)
        result["enqueue"] = now() - start
    if kind == "dirq":
        from dirq.QueueSimple import QueueSimple
        q = QueueSimple(path + "/enqueue")
        time_adds(q)
        start = now()
        done = 0
        for name in q:
            if q.lock(name):
                q.get(name)
                q.remove(name)
                done += 1
        result["consume"] = now() - start
        assert done == count, done
        q = QueueSimple(path + "/cycle")
        start = now()
        for _ in range(count):
            name = q.add(data)
            if q.lock(name):
                q.get(name)
                q.remove(name)
        result["cycle"] = now() - start
    else:
        import mailbox
        box = mailbox.Maildir(path + "/enqueue", create=True)
        time_adds(box)
        start = now()
        done = 0
        for key in box.keys():
            box.get_bytes(key)
            box.remove(key)
            done += 1
        result["consume"] = now() - start
        assert done == count, done
        box = mailbox.Maildir(path + "/cycle", create=True)
        start = now()
        for _ in range(count):
            key = box.add(data)
            box.get_bytes(key)
            box.remove(key)
        result["cycle"] = now() - start
    with open(out, "w") as f:
        json.dump(result, f)
    """#

  var python: String {
    if let python = options.python { return python }
    let venv = FileManager.default.currentDirectoryPath + "/.venv-peers/bin/python"
    return FileManager.default.isExecutableFile(atPath: venv) ? venv : "/usr/bin/env"
  }

  var pythonArguments: [String] { python == "/usr/bin/env" ? ["python3"] : [] }

  func run() throws {
    let scriptPath = workspace.base + "/peer.py"
    try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
    let count = options.quick ? 1_000 : 2_000
    for peer in ["dirq", "maildir"] {
      var cSamples: [[Double]] = [[], [], []]
      var peerSamples: [[Double]] = [[], [], []]
      var available = true
      try Rounds.interleave(options.roundCount, while: { available }) {
        for (index, measure) in ["enqueue", "consume", "cycle"].enumerated() {
          let path = workspace.fresh("c-peer")
          defer { workspace.remove(path) }
          let side = try BaselineSide(root: path, durable: false)
          let nanoseconds: Int64
          switch measure {
          case "enqueue": nanoseconds = try side.timeEnqueue(count: count, size: Self.size)
          case "consume":
            try side.prefill(count: count, size: Self.size, durable: false)
            nanoseconds = try side.timeConsume(count: count)
          default: nanoseconds = try side.timeCycle(count: count, size: Self.size)
          }
          cSamples[index].append(Rounds.rate(count, nanoseconds))
        }
      } library: {
        let path = workspace.fresh("\(peer)-peer")
        defer { workspace.remove(path) }
        try FileManager.default.createDirectory(
          atPath: path, withIntermediateDirectories: true)
        let out = path + "/result.json"
        let pid = try Children.spawn(
          pythonArguments + [scriptPath, peer, path, String(count), String(Self.size), out],
          executable: python)
        guard try Children.wait(pid).status == 0,
          let data = FileManager.default.contents(atPath: out),
          let object = try JSONSerialization.jsonObject(with: data) as? [String: Int64]
        else {
          available = false
          return
        }
        for (index, measure) in ["enqueue", "consume", "cycle"].enumerated() {
          peerSamples[index].append(Rounds.rate(count, object[measure] ?? 0))
        }
      }
      let names = ["enqueue", "claim+read+ack", "full cycle"]
      for index in 0..<3 {
        report.add(
          Measurement(
            group: "peers", name: names[index], durability: "relaxed", size: Self.size,
            unit: "msg/s",
            library: available ? Statistics.median(peerSamples[index]) : nil,
            baseline: Statistics.median(cSamples[index]), against: peer,
            note: available
              ? "first column is \(peer), not the library; \(count) msgs/run"
              : "\(peer) not installed (see docs/PERFORMANCE.md)",
            rounds: options.roundCount))
      }
    }
  }
}
