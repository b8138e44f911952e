import Foundation
import Glibc
import Testing

@testable import AppGroupMailbox

/// Found by an adversarial session: js.publish is a request, and the first answer on the
/// subject wins. A subscriber that is not JetStream answering with a PubAck-shaped reply made
/// forward.py answer "ack" (drain deleted the messages) although no stream stored them, even
/// with `--stream`, whose Nats-Expected-Stream header only JetStream checks.
@Suite struct NATSAckCheckTests {
  /// Subscribes `argv[2]` on `argv[1]`, answers every request with a PubAck of stream FAKE,
  /// and creates `argv[3]` once the server has the subscription.
  static let responder = """
    import asyncio, sys, nats
    async def main():
        nc = await nats.connect(sys.argv[1])
        async def answer(m):
            await m.respond(b'{"stream":"FAKE","seq":1}')
        await nc.subscribe(sys.argv[2], cb=answer)
        await nc.flush()
        open(sys.argv[3], "w").close()
        await asyncio.sleep(3600)
    asyncio.run(main())
    """

  @Test(.enabled(if: NATSBridge.runs, NATSBridge.reason))
  func `An answer from another stream than --stream is no acknowledgement`() throws {
    let container = try TemporaryContainer()
    let server = try NATSBridge.serverWithStream(in: container, subject: "mailbox.jobs")
    defer { server.stop() }
    let ready = container.url.appendingPathComponent("responder-ready")
    let responder = try Processes.start(
      NATSBridge.python, ["-c", Self.responder, server.url, "service.rpc", ready.path])
    defer {
      responder.signal(SIGKILL)
      _ = try? responder.finish(deadline: 30)
    }
    #expect(
      NATSBridge.waitUntil(deadline: 60) { FileManager.default.fileExists(atPath: ready.path) })
    let outgoing = try container.rawMailbox(namespace: "out")
    let ids = try (1...3).map { try outgoing.enqueue(Data("\($0)".utf8)).id }
    let forwarded = try Mailboxctl.run(
      ["drain"] + container.arguments(namespace: "out") + [
        "--coprocess", NATSBridge.python.path, NATSBridge.script("forward.py"), "--server",
        server.url, "--subject", "service.rpc", "--stream", "MAILBOX",
      ])
    #expect(forwarded.status == 0, "\(forwarded.stderr)")
    #expect(forwarded.stderr.contains("no acknowledgement of stream MAILBOX: stream 'FAKE'"))
    // Nothing was stored, so nothing may leave the mailbox.
    #expect(try outgoing.inspector.status().depth == ids.count)
    #expect(try NATSBridge.info(server, ["--name", "MAILBOX"])["messages"] as? Int == 0)
  }
}
