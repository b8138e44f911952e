#!/usr/bin/env python3
"""Forwards a mailbox into a NATS JetStream stream: the long-running handler of
``mailboxctl drain --follow --coprocess`` (docs/HANDLER-PROTOCOL.md, docs/SCALING.md).

    mailboxctl drain --container DIR --namespace jobs --follow --jobs 64 \\
        --coprocess .venv/bin/python python/nats_bridge/forward.py \\
        --server nats://nats1:4222 --subject mailbox.jobs

Each message is published to ``--subject`` with ``Nats-Msg-Id`` set to the message id (and the
headers of common.py), as the message's JSON bytes exactly as stored. Only after JetStream's
publish acknowledgement (the message is stored, on every replica the stream asks for) does the
handler answer "ack", and drain deletes the message. A publish that fails or is not acknowledged
within ``--publish-timeout`` seconds is answered "retry after ``--retry-after`` seconds": the
message stays in the mailbox and is published again later; a second publish inside the
stream's duplicate window is dropped by JetStream, so the stream holds each message once.

Up to drain's ``--jobs`` messages are in flight at once, answered as their acknowledgements
come back (in any order). Needs the ``nats-py`` package (PyPI).
"""

import argparse
import asyncio
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mailbox_handler  # noqa: E402
from nats_bridge import common  # noqa: E402
from nats_bridge.common import log  # noqa: E402

MESSAGE_KEY = b',"message":'


class RawSession(mailbox_handler.Session):
    """A handler session that also hands out each message's bytes as drain sent them."""

    def lines(self):
        """Yields (fields, message bytes) per message line; ends at end of file."""
        for line in iter(self._in.readline, b""):
            if not line.strip():
                continue
            fields = json.loads(line)
            yield fields, payload(line)


def payload(line):
    """The bytes of the "message" value of one drain line: drain writes it last, embedded as
    stored (docs/HANDLER-PROTOCOL.md). No earlier value can hold an unescaped quote, so the
    first ``,"message":`` is the key."""
    start = line.index(MESSAGE_KEY) + len(MESSAGE_KEY)
    end = len(line.rstrip(b"\r\n"))
    if line[end - 1:end] != b"}":
        raise ValueError("a message line that does not end with }")
    return line[start:end - 1]


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Forward mailboxctl drain --coprocess messages into NATS JetStream.")
    common.add_connection_arguments(parser)
    parser.add_argument("--subject", required=True, help="the JetStream subject to publish to")
    parser.add_argument(
        "--stream", default=None,
        help="the stream that must store it (sent as Nats-Expected-Stream; default any)")
    parser.add_argument(
        "--publish-timeout", type=float, default=5.0,
        help="seconds to wait for the publish acknowledgement (default 5)")
    parser.add_argument(
        "--retry-after", type=float, default=2.0,
        help="seconds after which a message whose publish failed is delivered again (default 2)")
    return parser.parse_args()


class Forwarder:
    def __init__(self, arguments, session):
        self.arguments = arguments
        self.session = session
        self.nc = None
        self.js = None
        self.connected = asyncio.Event()
        self.tasks = set()

    def answer(self, send, *values):
        try:
            send(*values)
        except (BrokenPipeError, ValueError, OSError):
            pass  # drain is gone: it releases or re-claims what it held

    async def forward(self, fields, data):
        message_id = fields["id"]
        headers = {common.MSG_ID: message_id}
        if fields.get("enqueuedAt"):
            headers[common.ENQUEUED_AT] = fields["enqueuedAt"]
        if fields.get("messageType"):
            headers[common.TYPE] = fields["messageType"]
        try:
            if self.js is None:
                await asyncio.wait_for(self.connected.wait(), self.arguments.publish_timeout)
            future = await self.js.publish_async(
                self.arguments.subject, data, stream=self.arguments.stream, headers=headers,
                wait_stall=self.arguments.publish_timeout)
            await asyncio.wait_for(future, self.arguments.publish_timeout)
        except Exception as error:  # noqa: BLE001 - every failure means "not stored yet"
            log.say(f"publish failed, retrying in {self.arguments.retry_after:g} s: "
                    f"{type(error).__name__}: {error}", kind=type(error).__name__)
            self.answer(self.session.retry, message_id, self.arguments.retry_after)
        else:
            self.answer(self.session.ack, message_id)

    async def connect(self):
        delay = 0.1
        while True:
            try:
                self.nc = await common.connect(self.arguments, "mailbox-forward")
                self.js = self.nc.jetstream()
                self.connected.set()
                return
            except Exception as error:  # noqa: BLE001 - keep trying; messages get "retry"
                log.say(f"cannot connect yet: {type(error).__name__}: {error}", kind="connect")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def run(self):
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        def read():
            try:
                for item in self.session.lines():
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            except Exception as error:  # noqa: BLE001 - a broken line ends the handler
                log.say(f"reading drain's input: {type(error).__name__}: {error}")
            loop.call_soon_threadsafe(queue.put_nowait, None)

        connecting = asyncio.create_task(self.connect())
        threading.Thread(target=read, daemon=True).start()
        while (item := await queue.get()) is not None:
            task = asyncio.create_task(self.forward(*item))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        if self.tasks:
            await asyncio.wait(set(self.tasks))
        connecting.cancel()
        if self.nc is not None:
            await self.nc.close()


def main():
    arguments = parse_arguments()
    session = RawSession()
    asyncio.run(Forwarder(arguments, session).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
