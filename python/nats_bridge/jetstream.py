#!/usr/bin/env python3
"""Sets up and inspects the JetStream side of the bridge (docs/SCALING.md), with nats-py:

    jetstream.py create-stream --name MAILBOX --subject mailbox.jobs --duplicate-window 3600
    jetstream.py create-consumer --name MAILBOX --durable host7 [--ack none] [--filter S]
    jetstream.py delete-consumer --name MAILBOX --durable host7
    jetstream.py info --name MAILBOX [--durable local]     # JSON: messages, pending, ...
    jetstream.py dump --name MAILBOX                       # JSON Lines: seq, id, headers, data
    jetstream.py publish --subject mailbox.jobs [--in-flight 64] [--input F] < messages.jsonl

``publish`` reads JSON Lines ``{"id", "message"[, "enqueuedAt"][, "headers"]}`` (the message's
JSON is sent as is; ``headers`` an object of more headers) and publishes each with
``Nats-Msg-Id`` = id, waiting for every acknowledgement; it prints
``{"published": N, "seconds": S}``. Exit status 0, or 1 with the reason on standard error,
also when no server answers (each ``--server`` tried 3 times, half a second apart).
"""

import argparse
import asyncio
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from nats_bridge import common  # noqa: E402


async def create_stream(js, arguments):
    """Creates the stream, or changes the options given of one that exists: the others keep
    their values (an update with a whole new configuration would reset them, such as a
    max_msg_size or max_bytes an operator set), its subjects too when no --subject is given."""
    import dataclasses

    import nats.js.errors
    from nats.js.api import RetentionPolicy, StorageType, StreamConfig

    options = {"subjects": arguments.subject} if arguments.subject else {}
    if arguments.retention is not None:
        options["retention"] = RetentionPolicy(arguments.retention)
    if arguments.replicas is not None:
        options["num_replicas"] = arguments.replicas
    if arguments.duplicate_window is not None:
        options["duplicate_window"] = arguments.duplicate_window
    if arguments.max_age is not None:
        options["max_age"] = arguments.max_age or None
    if arguments.max_msg_size is not None:
        options["max_msg_size"] = arguments.max_msg_size
    try:
        current = (await js.stream_info(arguments.name)).config
    except nats.js.errors.NotFoundError:
        if not arguments.subject:
            raise ValueError(f"stream {arguments.name} does not exist: give --subject to create "
                             "it") from None
        created = {"retention": RetentionPolicy.LIMITS, "num_replicas": 1,
                   "duplicate_window": 3600.0} | options
        info = await js.add_stream(
            StreamConfig(name=arguments.name, storage=StorageType.FILE, **created))
    else:
        info = await js.update_stream(dataclasses.replace(current, **options))
    print(json.dumps({"stream": info.config.name, "subjects": info.config.subjects,
                      "duplicateWindow": info.config.duplicate_window,
                      "replicas": info.config.num_replicas,
                      "maxMsgSize": info.config.max_msg_size}))


async def create_consumer(js, arguments):
    from nats.js.api import AckPolicy, ConsumerConfig

    config = ConsumerConfig(
        durable_name=arguments.durable, ack_policy=AckPolicy(arguments.ack),
        filter_subject=arguments.filter, deliver_subject=arguments.push)
    created = await js.add_consumer(arguments.name, config=config)
    print(json.dumps({"durable": created.config.durable_name,
                      "ackPolicy": getattr(created.config.ack_policy, "value",
                                           created.config.ack_policy),
                      "filterSubject": created.config.filter_subject,
                      "deliverSubject": created.config.deliver_subject}))


async def delete_consumer(js, arguments):
    await js.delete_consumer(arguments.name, arguments.durable)
    print(json.dumps({"deleted": arguments.durable}))


async def info(js, arguments):
    stream = await js.stream_info(arguments.name)
    result = {"messages": stream.state.messages, "bytes": stream.state.bytes,
              "firstSeq": stream.state.first_seq, "lastSeq": stream.state.last_seq}
    if arguments.durable:
        consumer = await js.consumer_info(arguments.name, arguments.durable)
        result.update(numPending=consumer.num_pending, numAckPending=consumer.num_ack_pending,
                      numRedelivered=consumer.num_redelivered)
    print(json.dumps(result))


async def dump(js, arguments):
    stream = await js.stream_info(arguments.name)
    out = sys.stdout
    for seq in range(stream.state.first_seq, stream.state.last_seq + 1):
        try:
            message = await js.get_msg(arguments.name, seq)
        except Exception:  # noqa: BLE001 - a deleted sequence
            continue
        # nats-py gives a header value that is not ASCII as an email.header.Header: as text.
        headers = {key: str(value) for key, value in (message.headers or {}).items()}
        out.write(json.dumps({
            "seq": seq, "id": headers.get(common.MSG_ID), "headers": headers,
            "data": base64.b64encode(message.data or b"").decode()}) + "\n")


async def publish(js, arguments):
    source = open(arguments.input, "rb") if arguments.input else sys.stdin.buffer
    with source:
        lines = [json.loads(line) for line in source if line.strip()]
    items = [(item, json.dumps(item["message"], ensure_ascii=False,
                               separators=(",", ":")).encode()) for item in lines]
    started = time.monotonic()
    window = asyncio.Semaphore(arguments.in_flight)
    futures = []
    for item, data in items:
        headers = {common.MSG_ID: item["id"]}
        if item.get("enqueuedAt"):
            headers[common.ENQUEUED_AT] = item["enqueuedAt"]
        headers.update(item.get("headers", {}))
        await window.acquire()  # waits (and lets the client send) when in_flight are out
        future = await js.publish_async(arguments.subject, data, headers=headers)
        future.add_done_callback(lambda _: window.release())
        futures.append(future)
    for future in futures:
        await asyncio.wait_for(future, 30)  # raises the first failed publish's error
    print(json.dumps({"published": len(items), "seconds": time.monotonic() - started}))


def main():
    parser = argparse.ArgumentParser(
        description="Set up and inspect the bridge's JetStream side.",
        epilog="Exit status 0, or 1 with the reason on standard error, also when no server "
        "answers (each --server tried 3 times, half a second apart).")
    common.add_connection_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser(
        "create-stream", help="create a stream, or change the options given of one that exists "
        "(the others keep their values)")
    create.add_argument("--name", "--stream", dest="name", required=True, help="the stream")
    create.add_argument(
        "--subject", action="append",
        help="a subject it stores (repeat for more); needed to create it, and given to a stream "
        "that exists, the whole list replaces its subjects")
    create.add_argument("--retention", choices=["limits", "workqueue", "interest"],
                        help="default limits")
    create.add_argument("--replicas", type=int, help="default 1")
    create.add_argument("--duplicate-window", type=float,
                        help="seconds (default 3600); longer than the longest retry delay")
    create.add_argument("--max-age", type=float, help="seconds; 0 (the default): unlimited")
    create.add_argument("--max-msg-size", type=int,
                        help="bytes of headers and payload; -1 (the default): unlimited")
    consumer = commands.add_parser(
        "create-consumer", help="create a durable consumer (consume.py makes its own)")
    consumer.add_argument("--name", "--stream", dest="name", required=True, help="the stream")
    consumer.add_argument("--durable", required=True)
    consumer.add_argument("--ack", default="explicit", choices=["explicit", "none", "all"])
    consumer.add_argument("--filter", default=None, help="a filter subject")
    consumer.add_argument("--push", default=None, help="a deliver subject (a push consumer)")
    deleting = commands.add_parser(
        "delete-consumer", help="delete a durable consumer (one made otherwise than consume.py "
        "makes, or a host's that is gone)")
    deleting.add_argument("--name", "--stream", dest="name", required=True, help="the stream")
    deleting.add_argument("--durable", required=True)
    show = commands.add_parser("info", help="stream (and consumer) counts as JSON")
    show.add_argument("--name", "--stream", dest="name", required=True, help="the stream")
    show.add_argument("--durable", default=None)
    dumping = commands.add_parser("dump", help="every stored message as JSON Lines")
    dumping.add_argument("--name", "--stream", dest="name", required=True, help="the stream")
    sending = commands.add_parser("publish", help="publish JSON Lines {id, message} from stdin")
    sending.add_argument("--subject", required=True)
    sending.add_argument(
        "--in-flight", type=common.integer(1, 65536), default=64,
        help="publishes awaiting their acknowledgement at once (1 to 65536, default 64)")
    sending.add_argument("--input", default=None, help="read this file instead of stdin")
    arguments = parser.parse_args()
    action = {"create-stream": create_stream, "create-consumer": create_consumer,
              "delete-consumer": delete_consumer, "info": info, "dump": dump,
              "publish": publish}[arguments.command]

    async def run():
        nc = await common.connect(arguments, "mailbox-jetstream")
        try:
            await action(nc.jetstream(), arguments)
        finally:
            await nc.close()

    try:
        asyncio.run(run())
    except Exception as error:  # noqa: BLE001 - one line, not a trace
        print(f"jetstream.py {arguments.command}: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
