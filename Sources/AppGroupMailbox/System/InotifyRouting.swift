import Glibc

/// What a pending index learns from ``InotifyInstance/take(_:reading:into:)``.
enum InotifyFeedStatus: Equatable, Sendable {
  /// The names taken are every arrival since the previous take.
  case trusted
  /// Events were lost (`IN_Q_OVERFLOW`, a feed past ``InotifyRouting/Feed/limit``, a read
  /// error) or the directory was moved or unmounted: the index must list again.
  case untrusted
  /// The watch is gone (`IN_IGNORED`: directory deleted or unmounted, or the subscription was
  /// removed): unsubscribe, watch again, list again.
  case lost
}

/// The state an ``InotifyInstance`` guards with its one lock: the subscribers of each watch,
/// the feeds of the pending indexes, the batches waiting for the reader thread, and the read
/// buffer every read(2) of the descriptor uses.
struct InotifyRouting: ~Copyable {
  struct Subscriber {
    var id: Int
    var mask: UInt32
    /// nil for a feed subscriber.
    var handler: InotifyInstance.Handler?
  }

  /// The names reported for one pending index since it last took them.
  struct Feed {
    /// Past this many bytes of names (about 3,000 names) the feed drops them and reports
    /// ``InotifyFeedStatus/untrusted``: an index that claims so rarely relists instead, and an
    /// idle mailbox's feed stays small.
    static let limit = 256 * 1024

    var records: [UInt8] = []
    var untrusted = false
    var lost = false

    mutating func append(_ name: UnsafeRawBufferPointer) {
      guard !untrusted else { return }  // a listing follows, which sees these names
      guard records.count + 1 + name.count <= Self.limit else {
        untrusted = true
        records = []
        return
      }
      records.append(UInt8(clamping: name.count))
      records.append(contentsOf: name)
    }
  }

  /// Read buffer size: many events per read(2), and far above the minimum of
  /// `sizeof(struct inotify_event) + NAME_MAX + 1` (smaller reads fail with `EINVAL`).
  static let bufferSize = 64 * 1024
  /// A read that returned less than this left nothing queued when it ran.
  static let shortRead = bufferSize - (InotifyEventParser.headerSize + Int(NAME_MAX) + 1)
  /// Events that make a feed untrusted.
  static let distrusting = InotifyMask.bits(
    IN_Q_OVERFLOW, IN_IGNORED, IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT)

  var watches: [Int32: [Subscriber]] = [:]
  var feeds: [Int: Feed] = [:]
  /// Batches for handler subscribers (by subscriber id), in the order they were read, for the
  /// reader thread (``takeDeliveries()``); at most ``deliveryLimit`` events, then one
  /// `IN_Q_OVERFLOW` each.
  private var deliveries: [(id: Int, handler: InotifyInstance.Handler, events: [InotifyEvent])] =
    []
  private var queuedEvents = 0
  /// While the queue is overflowed: the slot in `deliveries` of each subscriber's batch, which
  /// ends with its `IN_Q_OVERFLOW`.
  private var overflowSlots: [Int: Int]?
  /// The most events that wait for the reader thread (when a handler is slow while claims
  /// read): past it they are replaced by one `IN_Q_OVERFLOW` per handler subscriber, as the
  /// kernel does past `fs.inotify.max_queued_events` (inotify(7)); events that say a watch is
  /// gone are kept, so its watcher still learns it must watch again.
  static let deliveryLimit = 8_192
  var nextID = 1
  var closed = false
  /// Whether the reader thread was started, and the write end of its wake-up pipe (-1: none).
  var started = false
  var wakeWrite: Int32 = -1
  private let buffer = UnsafeMutableRawPointer.allocate(
    byteCount: bufferSize, alignment: MemoryLayout<inotify_event>.alignment)

  deinit { buffer.deallocate() }

  /// Adds (or joins, `IN_MASK_ADD`: another subscriber may watch the inode and its mask must
  /// stay, inotify(7)) a watch on each of `paths` for one new subscriber; removes what it added
  /// when one fails.
  mutating func subscribe(
    _ paths: [String], mask: UInt32, handler: InotifyInstance.Handler?, fd: Int32
  ) throws -> [InotifyWatch] {
    let id = nextID
    nextID += 1
    var added: [InotifyWatch] = []
    do {
      for path in paths {
        let watch = try Syscall.inotifyAddWatch(fd, path, mask | UInt32(bitPattern: IN_MASK_ADD))
        watches[watch, default: []].append(Subscriber(id: id, mask: mask, handler: handler))
        added.append(InotifyWatch(watch: watch, id: id))
      }
    } catch {
      for subscription in added { unsubscribe(subscription, fd: fd) }
      throw error
    }
    if handler == nil { feeds[id] = Feed() }
    return added
  }

  /// Removes one subscription (and its feed); the last subscriber of a watch removes the watch
  /// from the kernel (inotify_rm_watch(2)).
  mutating func unsubscribe(_ subscription: InotifyWatch, fd: Int32) {
    feeds[subscription.id] = nil
    guard var subscribers = watches[subscription.watch] else { return }
    subscribers.removeAll { $0.id == subscription.id }
    if subscribers.isEmpty {
      watches[subscription.watch] = nil
      Syscall.inotifyRemoveWatch(fd, subscription.watch)
    } else {
      watches[subscription.watch] = subscribers
    }
  }

  /// Moves feed `id`'s names into `records` and reports its status. The two buffers trade
  /// places, so a quiet mailbox reuses them; one grown past 4 KiB by a burst is freed instead,
  /// so an idle index and its feed do not keep a burst's capacity.
  mutating func take(_ id: Int, into records: inout [UInt8]) -> InotifyFeedStatus {
    records.removeAll(keepingCapacity: records.capacity <= 4096)
    guard let slot = feeds.index(forKey: id) else { return .lost }
    swap(&records, &feeds.values[slot].records)
    let feed = feeds.values[slot]
    feeds.values[slot].untrusted = false
    return feed.lost ? .lost : feed.untrusted ? .untrusted : .trusted
  }

  /// Reads what `fd` has queued without blocking and routes it: usually one read(2), again
  /// only when the buffer may have cut the queue short (events queued later belong to
  /// operations that were not finished when the read ran). Returns whether batches for the
  /// reader thread now wait that did not before.
  mutating func readAndRoute(_ fd: Int32) -> Bool {
    let hadDeliveries = hasDeliveries
    while true {
      let got = Glibc.read(fd, buffer, Self.bufferSize)
      if got < 0 {
        let code = Errno.current
        if code == .interrupted { continue }
        if code != .wouldBlock { distrustFeeds() }
        break
      }
      if got == 0 {
        distrustFeeds()
        break
      }
      route(UnsafeRawBufferPointer(start: buffer, count: got))
      if got < Self.shortRead { break }
    }
    return !hadDeliveries && hasDeliveries
  }

  private mutating func distrustFeeds() {
    for slot in feeds.indices { feeds.values[slot].untrusted = true }
  }

  /// Hands each event to the subscribers of its watch: a name to a feed that asked for its
  /// kind, a batch entry to a handler; `IN_Q_OVERFLOW` (watch -1) to every subscriber.
  private mutating func route(_ bytes: UnsafeRawBufferPointer) {
    var batches: [Int: Int] = [:]
    var records = InotifyRecords(bytes)
    while let record = records.next() {
      if record.watch == -1 {
        distrustFeeds()
        let event = record.event
        for subscribers in watches.values {
          for subscriber in subscribers where subscriber.handler != nil {
            deliver(event, to: subscriber, &batches)
          }
        }
        continue
      }
      guard let subscribers = watches[record.watch] else { continue }
      var event: InotifyEvent?
      for subscriber in subscribers {
        if subscriber.handler != nil {
          if event == nil { event = record.event }
          if let event { deliver(event, to: subscriber, &batches) }
        } else if record.mask & Self.distrusting != 0 {
          feeds[subscriber.id]?.untrusted = true
          if record.mask & UInt32(IN_IGNORED) != 0 { feeds[subscriber.id]?.lost = true }
        } else if record.mask & subscriber.mask & (InotifyMask.arrivals | InotifyMask.departures)
          != 0, !record.name.isEmpty
        {
          feeds[subscriber.id]?.append(record.name)
        }
      }
      if record.mask & UInt32(IN_IGNORED) != 0 { watches[record.watch] = nil }
    }
  }

  /// Whether batches wait for the reader thread.
  var hasDeliveries: Bool { !deliveries.isEmpty }

  /// The batches waiting for the reader thread, removed.
  mutating func takeDeliveries() -> [(InotifyInstance.Handler, [InotifyEvent])] {
    defer {
      deliveries = []
      queuedEvents = 0
      overflowSlots = nil
    }
    return deliveries.map { ($0.handler, $0.events) }
  }

  private mutating func deliver(
    _ event: InotifyEvent, to subscriber: Subscriber, _ batches: inout [Int: Int]
  ) {
    guard let handler = subscriber.handler else { return }
    if overflowSlots == nil, queuedEvents >= Self.deliveryLimit { overflowDeliveries() }
    if overflowSlots != nil {
      // Overflowed: a subscriber that joined since gets its overflow too; only an event that
      // says the watch is gone is kept (before the overflow, which must come last).
      let slot = overflowSlot(subscriber.id, handler)
      if event.watch != -1, event.mask & Self.distrusting != 0 {
        deliveries[slot].events.insert(event, at: deliveries[slot].events.count - 1)
      }
      return
    }
    queuedEvents += 1
    if let slot = batches[subscriber.id] {
      deliveries[slot].events.append(event)
    } else {
      batches[subscriber.id] = deliveries.count
      deliveries.append((subscriber.id, handler, [event]))
    }
  }

  /// Replaces the waiting batches by one `IN_Q_OVERFLOW` for each handler subscriber, keeping
  /// the events that say a watch is gone (`IN_IGNORED`, `IN_DELETE_SELF`, ...: their watcher
  /// may have no watch left to hear anything else); later events are dropped, except those,
  /// until the reader thread takes the batches.
  private mutating func overflowDeliveries() {
    let waiting = deliveries
    deliveries = []
    overflowSlots = [:]
    for batch in waiting {
      let slot = overflowSlot(batch.id, batch.handler)
      let kept = batch.events.filter { $0.watch != -1 && $0.mask & Self.distrusting != 0 }
      deliveries[slot].events.insert(contentsOf: kept, at: deliveries[slot].events.count - 1)
    }
    for subscribers in watches.values {
      for subscriber in subscribers {
        if let handler = subscriber.handler { _ = overflowSlot(subscriber.id, handler) }
      }
    }
  }

  /// The slot of `id`'s overflow batch, added (ending with `IN_Q_OVERFLOW`) when it has none.
  private mutating func overflowSlot(_ id: Int, _ handler: @escaping InotifyInstance.Handler)
    -> Int
  {
    if let slot = overflowSlots?[id] { return slot }
    let overflow = InotifyEvent(
      watch: -1, mask: UInt32(bitPattern: IN_Q_OVERFLOW), cookie: 0, name: nil)
    deliveries.append((id, handler, [overflow]))
    overflowSlots?[id] = deliveries.count - 1
    return deliveries.count - 1
  }
}
