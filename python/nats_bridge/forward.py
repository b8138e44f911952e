#!/usr/bin/env python3
"""Forwards a mailbox into a NATS JetStream stream: the long-running handler of
``mailboxctl drain --follow --coprocess`` (docs/HANDLER-PROTOCOL.md, docs/SCALING.md).

    mailboxctl drain --container DIR --namespace jobs --follow --jobs 128 \\
        --coprocess .venv/bin/python python/nats_bridge/forward.py \\
        --server nats://nats1:4222 --subject mailbox.jobs

Each message is published to ``--subject`` with ``Nats-Msg-Id`` set to the message id (and the
headers of common.py), as the message's JSON bytes exactly as stored. Only after JetStream's
publish acknowledgement (the message is stored, on every replica the stream asks for) does the
handler answer "ack", and drain deletes the message. A publish that fails or is not acknowledged
within ``--publish-timeout`` seconds (0.1 to 600, default 5) is answered "retry after
``--retry-after`` seconds" (0.1 to 86400, default 2; another value of either exits 2): the
message stays in the mailbox and is published again later; a second publish inside the
stream's duplicate window is dropped by JetStream, so the stream holds each message once. A
message that can never be stored, its headers and payload together over the server's
max_payload or the stream's max_msg_size, is answered "deadletter" (drain quarantines it) and
logged with its id.
Until the first connection succeeds (tried again and again while no server answers, logged
"cannot connect yet"), and while a lost one is being restored, messages are answered "retry"
the same way. An error trying again cannot mend (a missing ``--creds`` file or ``nkeys``
module, an authorization refused) is one line on standard error and exit status 78 (a server
URL that is not a NATS one, and a ``--creds`` file it cannot read, before the handshake, so
drain gives up at once instead of starting it again), as is a
``--stream`` that can never store a message: one that does not exist, is sealed, takes no
publishes (a mirror) or does not acknowledge them (no_ack), checked when forward.py connects
and again when no stream answers a publish (at most every 10 seconds), or that JetStream says
is not the stream of ``--subject`` (error 10060).

Up to drain's ``--jobs`` messages are in flight at once, answered as their acknowledgements
come back (in any order). A drain gone before the handshake ended (or one speaking another
protocol version) is said in one line on standard error, with exit status 1. Needs the
``nats-py`` package (PyPI).
"""

import argparse
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mailbox_handler  # noqa: E402
import nats.errors  # noqa: E402
import nats.js.errors  # noqa: E402
from nats_bridge import common  # noqa: E402
from nats_bridge.common import log  # noqa: E402

MESSAGE_KEY = b',"message":'
MAX_LINE = 1 << 27  # drain's longest message line: a 64 MiB message, escaped


class AsyncSession(mailbox_handler.Session):
    """The library's session (its handshake and answers) with drain's lines read by asyncio
    and the answers of one event-loop turn written together, in one write."""

    def __init__(self):
        self._loop = None
        self._pending = []
        # Unbuffered: the greeting is read byte by byte, so nothing after it is read ahead of
        # asyncio's reader.
        stdin = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
        super().__init__(stdin=stdin, stdout=sys.stdout.buffer)
        sys.stdout = sys.stderr  # print() must not corrupt the protocol

    async def messages(self):
        """Yields (fields, message bytes) per message line until end of file."""
        self._loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await self._loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._in)
        while line := await reader.readline():
            if not line.endswith(b"\n"):
                break  # cut when drain closed the input: not a message (HANDLER-PROTOCOL.md)
            if line.strip():
                yield split(line)

    def _send(self, obj):
        if self._loop is None:
            return super()._send(obj)
        self._pending.append(json.dumps(obj, separators=(",", ":")) + "\n")
        if len(self._pending) == 1:
            self._loop.call_soon(self.flush)

    def flush(self):
        """Writes the answers not written yet."""
        if not self._pending:
            return
        data = "".join(self._pending).encode()
        self._pending = []
        try:
            self._out.write(data)
            self._out.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # drain is gone: it releases or re-claims what it held


def split(line):
    """One drain line as (its fields but "message", the message's bytes). drain writes
    "message" last, its bytes embedded as stored (docs/HANDLER-PROTOCOL.md); no earlier value
    can hold an unescaped quote, so the first ``,"message":`` is that key."""
    key = line.index(MESSAGE_KEY)
    end = len(line.rstrip(b"\r\n"))
    if line[end - 1:end] != b"}":
        raise ValueError("a message line that does not end with }")
    return json.loads(line[:key] + b"}"), line[key + len(MESSAGE_KEY):end - 1]


PUBLISH_TIMEOUT = (0.1, 600.0)
RETRY_AFTER = (0.1, 86400.0)


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Forward mailboxctl drain --coprocess messages into NATS JetStream.")
    common.add_connection_arguments(parser)
    parser.add_argument("--subject", required=True, help="the JetStream subject to publish to")
    parser.add_argument(
        "--stream", default=None,
        help="the stream that must store it (sent as Nats-Expected-Stream; default any)")
    parser.add_argument(
        "--publish-timeout", type=common.seconds(*PUBLISH_TIMEOUT), default=5.0, metavar="SECONDS",
        help="seconds to wait for the publish acknowledgement, %g to %g (default 5)"
        % PUBLISH_TIMEOUT)
    parser.add_argument(
        "--retry-after", type=common.seconds(*RETRY_AFTER), default=2.0, metavar="SECONDS",
        help="seconds after which a message whose publish failed is delivered again, %g to %g "
        "(default 2; keep it under the stream's duplicate window)" % RETRY_AFTER)
    return parser.parse_args()


class Forwarder:
    def __init__(self, arguments, session):
        self.arguments = arguments
        self.session = session
        self.nc = None
        self.js = None
        self.connected = asyncio.Event()
        self.outstanding = set()
        self.connecting = None
        self.stream_checked = float("-inf")

    def failed(self, message_id, error):
        log.say(f"publish of message {message_id} failed, retrying in "
                f"{self.arguments.retry_after:g} s: {type(error).__name__}: {error}",
                kind=type(error).__name__)
        self.session.retry(message_id, self.arguments.retry_after)
        # No stream answered: one deleted since the check at connection (nats-py's own
        # reconnects make none) is looked for again, at most every STREAM_CHECK seconds.
        loop = asyncio.get_running_loop()
        if (isinstance(error, nats.js.errors.NoStreamResponseError) and self.js is not None
                and loop.time() - self.stream_checked >= STREAM_CHECK):
            self.stream_checked = loop.time()
            task = asyncio.create_task(self.check_stream())
            self.outstanding.add(task)
            task.add_done_callback(self.outstanding.discard)
        # nats-py gives up a connection the server closed for a protocol error (such as a
        # publish over max_payload) instead of reconnecting: connect again.
        if self.nc is not None and self.nc.is_closed and self.connecting.done():
            self.nc = self.js = None
            self.connected.clear()
            self.connecting = asyncio.create_task(self.connect())

    async def forward(self, fields, data):
        """Publishes one message; its answer is written when the acknowledgement comes."""
        message_id = fields["id"]
        if self.js is None:
            return self.failed(message_id, ConnectionError("not connected to NATS"))
        headers = {common.MSG_ID: message_id}
        if fields.get("enqueuedAt"):
            headers[common.ENQUEUED_AT] = fields["enqueuedAt"]
        headers.update(common.type_headers(fields.get("messageType")))
        if fields.get("payloadVersion", 1) != 1:
            headers[common.PAYLOAD_VERSION] = str(fields["payloadVersion"])
        if fields.get("priority", common.DEFAULT_PRIORITY) != common.DEFAULT_PRIORITY:
            headers[common.PRIORITY] = str(fields["priority"])
        # The server takes at most max_payload bytes of headers and payload together (nats-py
        # checks the payload alone, and the server then closes the connection).
        size = common.published_size(headers, data, self.arguments.stream)
        if size > self.nc.max_payload:
            log.record(f"message {message_id} is larger than the server takes ({size} bytes "
                       f"with its headers, max_payload {self.nc.max_payload}): dead letter")
            return self.session.dead_letter(
                message_id, "larger than the NATS server's max_payload")
        task = asyncio.create_task(self.publish(message_id, data, headers))
        self.outstanding.add(task)
        task.add_done_callback(self.outstanding.discard)

    async def publish(self, message_id, data, headers):
        """Publishes and waits for JetStream's acknowledgement (one request with its own
        timeout: nothing of the client's is held when the publish fails, as its publish_async
        semaphore was, which hung the forwarder for good after 4,000 failed publishes), then
        answers: ack, retry after a failure that may pass, or dead letter for a message the
        server can never take (larger than its max_payload, or than the stream's
        max_msg_size)."""
        timeout = self.arguments.publish_timeout
        try:
            ack = await self.js.publish(
                self.arguments.subject, data, timeout=timeout, stream=self.arguments.stream,
                headers=headers)
            # Any subscriber of the subject may answer the request, and the first answer wins:
            # only an acknowledgement that names a stream (the one --stream names) and a
            # sequence number says the message is stored.
            wanted = self.arguments.stream
            if not (isinstance(ack.stream, str) and ack.stream and (not wanted or ack.stream == wanted)
                    and isinstance(ack.seq, int) and not isinstance(ack.seq, bool) and ack.seq > 0):
                raise ValueError(f"an answer that is no acknowledgement of stream "
                                 f"{wanted or 'any'}: stream {ack.stream!r}, seq {ack.seq!r}")
        except nats.errors.MaxPayloadError as error:
            log.record(f"message {message_id} is larger than the server takes ({error}): "
                       "dead letter")
            self.session.dead_letter(message_id, "larger than the NATS server's max_payload")
        except nats.js.errors.APIError as error:
            if error.err_code in STREAM_REFUSES_EVERY_PUBLISH:
                self.give_up(f"cannot forward to stream {self.arguments.stream}: "
                             f"{error.description}")
            if error.err_code != STREAM_MESSAGE_TOO_LARGE:
                return self.failed(message_id, error)
            # Every publish of it would be refused the same way: retried, it would come back
            # for ever (and, held by drain, take one of its --jobs places each time).
            log.record(f"message {message_id} is larger than the stream takes "
                       f"({error.description}): dead letter")
            self.session.dead_letter(
                message_id, "larger than the JetStream stream's max_msg_size")
        except nats.errors.TimeoutError:
            self.failed(message_id, TimeoutError(f"no acknowledgement within {timeout:g} s"))
        except Exception as error:  # noqa: BLE001 - every other failure means "not stored yet"
            self.failed(message_id, error)
        else:
            self.session.ack(message_id)

    async def connect(self):
        """Connects (trying again until a server answers; messages get "retry" meanwhile). An
        error trying again cannot mend (see ``common.connect_retrying``) ends the program with
        exit 78 (EX_CONFIG) and one line on stderr: drain releases what it held and, after the
        handler's repeated ends, gives up (exit 69)."""
        try:
            self.nc = await common.connect_retrying(self.arguments, "mailbox-forward")
        except Exception as error:  # noqa: BLE001 - said plainly, not as a traceback
            self.give_up(f"cannot connect: {type(error).__name__}: {error}")
        self.js = self.nc.jetstream()
        self.stream_checked = asyncio.get_running_loop().time()
        await self.check_stream()
        self.connected.set()

    async def check_stream(self):
        """Ends the program with exit 78 when the ``--stream`` can never store what forward.py
        publishes: it does not exist, is sealed, takes no publishes (a mirror, or a stream of
        sources only: no subjects of its own), or does not acknowledge them (no_ack: no message
        would ever count as stored, and each retry stores another copy once the duplicate
        window passed). Nothing when it can, when no ``--stream`` is given, or when JetStream
        cannot say now (publishes are retried meanwhile). Its subjects are not matched against
        ``--subject``: a mapping in the server's configuration may route it there; a publish
        JetStream refuses as another stream's (error 10060) ends the program then."""
        if not self.arguments.stream:
            return
        try:
            config = (await self.js.stream_info(self.arguments.stream)).config
        except nats.js.errors.NotFoundError as error:
            why = error.description
        except Exception:  # noqa: BLE001 - no answer: not a verdict
            return
        else:
            if config.sealed:
                why = "it is sealed"
            elif not config.subjects:
                why = "it takes no publishes (no subjects of its own: a mirror, or sources only)"
            elif config.no_ack:
                why = "it does not acknowledge publishes (no_ack)"
            else:
                return
        self.give_up(f"cannot forward to stream {self.arguments.stream}: {why}")

    def give_up(self, line):
        """Writes the answers not written yet (acknowledged messages stay so), then says
        ``line`` and ends the program with exit 78 (``give_up``)."""
        self.session.flush()
        give_up(line)

    async def run(self):
        self.connecting = asyncio.create_task(self.connect())
        try:  # the first messages wait a little for the first connection, not the retry delay
            await asyncio.wait_for(asyncio.shield(self.connected.wait()),
                                   self.arguments.publish_timeout)
        except asyncio.TimeoutError:
            pass
        try:
            async for fields, data in self.session.messages():
                await self.forward(fields, data)
        except Exception as error:  # noqa: BLE001 - a broken line ends the handler
            log.say(f"reading drain's input: {type(error).__name__}: {error}")
        if self.outstanding:
            await asyncio.wait(set(self.outstanding))
        self.session.flush()
        self.connecting.cancel()
        if self.nc is not None:
            try:
                await self.nc.close()
            except Exception as error:  # noqa: BLE001 - every answer is written already
                log.say(f"closing the connection: {type(error).__name__}: {error}")


# JetStream's error code for a message over the stream's max_msg_size, headers and payload
# together (nats-server's server/errors.json, JSStreamMessageExceedsMaximumErr).
STREAM_MESSAGE_TOO_LARGE = 10054
# A stream that refuses every publish until an operator mends it (the same file): --stream names
# another stream than the one that stores --subject (JSStreamNotMatchErr), or the stream is
# sealed (JSStreamSealedErr).
STREAM_REFUSES_EVERY_PUBLISH = (10060, 10109)
STREAM_CHECK = 10.0  # seconds: at most one look for a stream that did not answer
CONFIGURATION_ERROR = 78  # EX_CONFIG, sysexits(3): as consume.py for a wrong set-up


def give_up(line):
    """Says ``line`` on standard error and ends the program with exit 78 (EX_CONFIG): drain
    releases what it held and, after the handler's repeated ends, gives up (exit 69)."""
    log.record(line)
    sys.stderr.flush()
    os._exit(CONFIGURATION_ERROR)


def main():
    arguments = parse_arguments()
    # Before the handshake: drain gives up at once on a first handler that ends before it, where
    # one that ends after it is started again, up to five times, each saying the same line.
    try:
        common.server_urls(arguments)
        common.readable_creds(arguments)
    except (ValueError, OSError) as error:
        log.record(f"cannot connect: {type(error).__name__}: {error}")
        return CONFIGURATION_ERROR
    try:
        session = AsyncSession()
    except mailbox_handler.ProtocolError as error:  # one line, not a trace
        log.record(str(error))
        return 1
    asyncio.run(Forwarder(arguments, session).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
