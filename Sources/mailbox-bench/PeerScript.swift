/// The Python side of the peers group (``PeerMeasures``): one process per round times, in
/// nanoseconds, `count` enqueues, then the claim+read+acknowledge of those messages, then
/// `count` full cycles in a second queue, and writes them as JSON to its last argument.
///
/// `python peer.py KIND PATH COUNT SIZE DURABILITY OUT`; KIND is `dirq`, `maildir`,
/// `persist-queue` or `sqlite`, DURABILITY `full` or `relaxed` (only the SQLite-based peers have
/// the setting: `PRAGMA synchronous=FULL` flushes the write-ahead log at every commit, `OFF`
/// never flushes, as the library's `.full` and `.relaxed`).
enum PeerScript {
  static let source = #"""
    import json, sys, time
    kind, path, count, size, durability, out = sys.argv[1:7]
    count, size, durable = int(count), int(size), durability == "full"
    data = b"x" * size
    now = time.perf_counter_ns
    result = {}

    def timed(name, body):
        start = now()
        body()
        result[name] = now() - start

    def run(open_queue, put, drain, cycle_one):
        # drain(queue) claims, reads and acknowledges every message as a consumer loop does;
        # cycle_one(queue) enqueues one message, then claims, reads and acknowledges it.
        queue = open_queue(path + "/enqueue")
        timed("enqueue", lambda: [put(queue) for _ in range(count)])
        got = []
        timed("consume", lambda: got.extend(drain(queue)))
        assert len(got) == count and all(len(body) >= size for body in got), len(got)
        queue = open_queue(path + "/cycle")
        bodies = []
        timed("cycle", lambda: [bodies.append(cycle_one(queue)) for _ in range(count)])
        assert all(len(body) >= size for body in bodies)

    if kind == "dirq":
        # QueueSimple: add; lock, get, remove. It never flushes.
        from dirq.QueueSimple import QueueSimple
        def drain(queue):
            bodies = []
            for name in queue:
                if queue.lock(name):
                    bodies.append(queue.get(name))
                    queue.remove(name)
            return bodies
        def cycle_one(queue):
            name = queue.add(data)
            assert queue.lock(name)
            body = queue.get(name)
            queue.remove(name)
            return body
        run(QueueSimple, lambda queue: queue.add(data), drain, cycle_one)
    elif kind == "maildir":
        # add (flushes the file, not the directory); get_bytes, remove: no claim step.
        import mailbox
        def drain(box):
            bodies = []
            for key in box.keys():
                bodies.append(box.get_bytes(key))
                box.remove(key)
            return bodies
        def cycle_one(box):
            key = box.add(data)
            body = box.get_bytes(key)
            box.remove(key)
            return body
        run(lambda where: mailbox.Maildir(where, create=True), lambda box: box.add(data), drain,
            cycle_one)
    elif kind == "persist-queue":
        # SQLiteAckQueue (WAL): put; get, ack. The flush setting is set on its one connection.
        from persistqueue import SQLiteAckQueue
        def open_queue(where):
            queue = SQLiteAckQueue(where, auto_commit=True, multithreading=False)
            queue._putter.execute("PRAGMA synchronous=" + ("FULL" if durable else "OFF"))
            return queue
        def take(queue):
            item = queue.get(block=False, raw=True)
            queue.ack(id=item["pqid"])
            return item["data"]
        def put(queue):
            queue.put(data)
        run(open_queue, put, lambda queue: [take(queue) for _ in range(count)],
            lambda queue: put(queue) or take(queue))
    else:
        # A plain table used as a queue, WAL mode: INSERT; claim = UPDATE ... RETURNING in a
        # transaction; acknowledge = DELETE.
        import sqlite3
        def open_queue(where):
            db = sqlite3.connect(where + ".db", isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=" + ("FULL" if durable else "OFF"))
            db.execute("CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " body BLOB NOT NULL, claimed_until REAL)")
            db.execute("CREATE INDEX ready ON queue (id) WHERE claimed_until IS NULL")
            return db
        def put(db):
            db.execute("INSERT INTO queue (body) VALUES (?)", (data,))
        def take(db):
            db.execute("BEGIN IMMEDIATE")
            rows = db.execute(
                "UPDATE queue SET claimed_until = ? WHERE id = (SELECT id FROM queue"
                " WHERE claimed_until IS NULL ORDER BY id LIMIT 1) RETURNING id, body",
                (time.time() + 60,)).fetchall()
            db.execute("COMMIT")
            db.execute("DELETE FROM queue WHERE id = ?", (rows[0][0],))
            return rows[0][1]
        run(open_queue, put, lambda db: [take(db) for _ in range(count)],
            lambda db: put(db) or take(db))
    with open(out, "w") as f:
        json.dump(result, f)
    """#
}
