import AppGroupMailbox
import Foundation

/// How entries print in `list`, `show` and `quarantine` (text rows or JSON objects).
enum EntryFormat {
  static let header =
    "STATE        ID                                    ENQUEUED AT                  SIZE  "
    + "PRI  DELIVERIES  DUE AT"

  /// `text` padded with spaces to `width` characters, or followed by one space when longer.
  static func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
  }

  /// One text row: state, id, enqueue time, size, priority level, deliveries, due time (a
  /// delayed message's, or when a claimed message's lease runs out; `-` for the others).
  static func row(_ entry: AppGroupMailboxEntry) -> String {
    let id = entry.id?.uuidString.lowercased() ?? "unknown"
    let date = entry.enqueuedAt.map(ISO8601.format) ?? "-"
    let size = String(entry.size)
    return pad(entry.state.rawValue, 13) + pad(id, 38) + pad(date, 28)
      + String(repeating: " ", count: max(0, 5 - size.count)) + size + "  "
      + pad(entry.priority.map(String.init) ?? "-", 5)
      + pad(entry.deliveryCount.map(String.init) ?? "-", 12)
      + ((entry.dueAt ?? entry.leaseExpiresAt).map(ISO8601.format) ?? "-")
  }

  /// The entry as a JSON object.
  static func object(_ entry: AppGroupMailboxEntry) -> JSONObject {
    var object = JSONObject()
    object.add("id", entry.id?.uuidString.lowercased())
    object.add("state", entry.state.rawValue)
    object.add("enqueuedAt", date: entry.enqueuedAt)
    object.add("size", entry.size)
    object.add("deliveryCount", entry.deliveryCount)
    object.add("priority", entry.priority)
    object.add("fileName", entry.fileName)
    if entry.state == .claimed { object.add("leaseExpiresAt", date: entry.leaseExpiresAt) }
    if entry.state == .delayed { object.add("dueAt", date: entry.dueAt) }
    if entry.state == .quarantined {
      object.add("quarantinedAt", date: entry.quarantinedAt)
      object.add("reason", entry.quarantineReason)
    }
    return object
  }

  /// Prints `envelope` as `key: value` lines or one JSON object; with `message`, the encoded
  /// message follows (text) or is embedded (JSON) when it is valid JSON.
  static func printEnvelope(_ envelope: AppGroupMailboxEnvelope, json: Bool) throws(CommandFailure)
  {
    let entry = envelope.entry
    if json {
      var object = object(entry)
      object.add("format", envelope.format)
      object.add("headerEnqueuedAt", date: envelope.enqueuedAt)
      object.add("messageType", envelope.messageType)
      object.add("payloadVersion", envelope.payloadVersion)
      object.add("key", envelope.key)
      object.add("messageBytes", envelope.messageBytes)
      object.add("unreadable", envelope.unreadableReason)
      if let message = envelope.message {
        if (try? JSONSerialization.jsonObject(with: message, options: .fragmentsAllowed)) != nil {
          object.add("message", rawJSON: message)
        } else {
          object.add("message", nil as String?)
        }
      }
      try Output.data(object.text + "\n")
      return
    }
    var rows: [(String, String)] = [
      ("id", entry.id?.uuidString.lowercased() ?? "unknown"),
      ("state", entry.state.rawValue),
      ("file", Output.shown(entry.fileName, limit: 300)),
      ("size", String(entry.size)),
    ]
    if let count = entry.deliveryCount { rows.append(("deliveries", String(count))) }
    if let priority = entry.priority { rows.append(("priority", String(priority))) }
    if let lease = entry.leaseExpiresAt { rows.append(("lease expires", ISO8601.format(lease))) }
    if let due = entry.dueAt { rows.append(("due at", ISO8601.format(due))) }
    if let reason = entry.quarantineReason { rows.append(("reason", reason)) }
    if let date = entry.quarantinedAt { rows.append(("quarantined at", ISO8601.format(date))) }
    if let format = envelope.format {
      rows.append(("format", String(format)))
      rows.append(("enqueued at", envelope.enqueuedAt.map(ISO8601.format) ?? "-"))
      rows.append(
        (
          "message type",
          envelope.messageType.map { $0.isEmpty ? "(none)" : Output.shown($0, limit: 300) } ?? "-"
        ))
      rows.append(("payload version", envelope.payloadVersion.map(String.init) ?? "-"))
      if let key = envelope.key { rows.append(("key", key)) }
      rows.append(("message bytes", envelope.messageBytes.map(String.init) ?? "-"))
    } else {
      rows.append(("envelope", "unreadable (\(envelope.unreadableReason ?? "unknown"))"))
    }
    // Values line up one space after the longest label ("payload version:").
    var text =
      rows.map { $0.0 + ":" + String(repeating: " ", count: 16 - $0.0.count) + $0.1 }
      .joined(separator: "\n") + "\n"
    if let message = envelope.message {
      text += "\n" + String(decoding: message, as: UTF8.self) + "\n"
    }
    try Output.data(text)
  }
}
