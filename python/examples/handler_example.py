#!/usr/bin/env python3
"""An example `mailboxctl drain --coprocess` handler: appends each JSON object message to a
file (default handled.txt) as one line, its id then the object (or its "text" field when it has
one), and dead-letters messages that are not JSON objects.

    mailboxctl drain --container DIR --coprocess python3 python/examples/handler_example.py out.txt
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mailbox_handler  # noqa: E402

path = sys.argv[1] if len(sys.argv) > 1 else "handled.txt"
out = open(path, "a", encoding="utf-8")


def handle(message):
    if not isinstance(message.message, dict):
        raise mailbox_handler.DeadLetter("not a JSON object")
    text = message.message.get("text", json.dumps(message.message, separators=(",", ":")))
    out.write(f"{message.id} {text}\n")
    out.flush()
    os.fsync(out.fileno())  # handled for good before the answer acknowledges it


sys.exit(mailbox_handler.run(handle))
