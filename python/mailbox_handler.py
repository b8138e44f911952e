"""A handler for `mailboxctl drain --coprocess`, in plain Python (standard library only).

The protocol (docs/HANDLER-PROTOCOL.md) in one paragraph: drain starts the handler once, greets
it on stdin with the protocol versions it speaks, and the handler answers with the version it
chose. Then each line on stdin is one message, and for each the handler writes one answer line
on stdout, in any order: ack, release, retry after N seconds, or deadletter.

The simplest handler is a function; returning acknowledges the message:

    import mailbox_handler

    def handle(message):
        print("got", message.message)   # print() (and child processes) write to stderr

    mailbox_handler.run(handle)

Raise ``Retry(seconds)`` to have the message delivered again later, ``DeadLetter(reason)`` to
quarantine it; any other exception releases it with drain's retry policy. ``run(handle,
threads=N)`` handles up to N messages at once (start drain with ``--jobs N``). For full control
(several messages in flight, answers from other threads or callbacks), use ``Session``:

    session = mailbox_handler.Session()
    for message in session:
        session.ack(message.id)          # or release / retry / dead_letter, from any thread
"""

import json
import math
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

PROTOCOL = "mailboxctl-handler"
VERSION = 1
CAPABILITIES = ["ack", "release", "retry", "deadletter"]
# The longest retry delay drain accepts (docs/HANDLER-PROTOCOL.md): a longer one, or one that is
# not a finite number, is a line drain refuses, which stops the handler and fails every message
# it holds.
MAX_RETRY_AFTER = 1e9

__all__ = [
    "DeadLetter", "Message", "ProtocolError", "Retry", "Session", "run",
]


class ProtocolError(Exception):
    """drain spoke something this library does not understand (another protocol version), or
    was gone before the handshake ended."""


class Retry(Exception):
    """Raised by a handler function: deliver the message again after ``after`` seconds (at
    most 1e9, as drain allows: a longer delay, or infinity, is sent as 1e9)."""

    def __init__(self, after=0.0):
        super().__init__(f"retry after {after} s")
        self.after = _retry_seconds(after)


class DeadLetter(Exception):
    """Raised by a handler function: give up on the message (it goes to quarantine)."""

    def __init__(self, reason=""):
        super().__init__(reason)
        self.reason = str(reason)


class Message:
    """One message: ``id`` (UUID text), ``delivery_count`` (1 on the first delivery),
    ``enqueued_at`` (ISO 8601 text, UTC), ``message_type`` ("" when untyped),
    ``payload_version`` (the version of the message's encoded form its producer recorded, 1
    unless it recorded another), ``priority`` (the level, 0 to 9; 5 from a drain that does not
    send it) and ``message`` (the JSON value, parsed)."""

    __slots__ = ("id", "delivery_count", "enqueued_at", "message_type", "payload_version",
                 "priority", "message")

    def __init__(self, fields):
        self.id = fields["id"]
        self.delivery_count = fields.get("deliveryCount", 1)
        self.enqueued_at = fields.get("enqueuedAt", "")
        self.message_type = fields.get("messageType", "")
        self.payload_version = fields.get("payloadVersion", 1)
        self.priority = fields.get("priority", 5)
        self.message = fields.get("message")

    def __repr__(self):
        return f"Message(id={self.id!r}, delivery_count={self.delivery_count})"


class Session:
    """The handler's end of the protocol. Creating it does the handshake (it reads drain's
    greeting from stdin and answers on stdout). Without ``stdin`` and ``stdout`` given, it moves
    the protocol's pipes off descriptors 0 and 1 first, to private copies that child processes
    do not inherit: descriptor 0 then reads /dev/null and descriptor 1 writes to stderr, as
    ``print()`` does. So neither ``print()`` nor a program the handler runs (``subprocess``,
    ``os.system``) can write a line into the protocol (drain would stop the handler as
    writing garbage and fail every message it holds) or read a message meant for the handler.
    Iterate to receive messages (iteration ends when drain closes stdin); answer each exactly
    once with ``ack``, ``release``, ``retry`` or ``dead_letter``, from any thread. A process
    forked from a handler (``os.fork``) should end with ``os._exit``: it holds a copy of the
    session and of ``run``'s threads, which a normal exit would wait for."""

    def __init__(self, stdin=None, stdout=None):
        if stdin is None:
            stand_in = os.open(os.devnull, os.O_RDONLY)
            stdin = _take_descriptor(0, "rb", stand_in)
            os.close(stand_in)
        if stdout is None:
            sys.stdout.flush()
            stdout = _take_descriptor(1, "wb", 2)
            sys.stdout = sys.stderr
        self._in = stdin
        self._out = stdout
        self._lock = threading.Lock()
        line = self._in.readline()
        if not line:
            raise ProtocolError("stdin ended before drain's greeting (drain is gone)")
        try:
            greeting = json.loads(line)
        except ValueError:
            greeting = None
        if not isinstance(greeting, dict) or greeting.get("protocol") != PROTOCOL:
            raise ProtocolError("stdin does not start with a mailboxctl-handler greeting")
        if VERSION not in greeting.get("versions", []):
            raise ProtocolError(
                f"drain speaks versions {greeting.get('versions')}; this library speaks {VERSION}")
        self.jobs = greeting.get("jobs", 1)
        self.capabilities = greeting.get("capabilities", [])
        try:
            self._send({"protocol": PROTOCOL, "version": VERSION, "capabilities": CAPABILITIES})
        except OSError as error:  # a broken pipe: drain died after its greeting
            raise ProtocolError(f"drain is gone before the handshake ended: {error}") from None

    def __iter__(self):
        while True:
            line = self._in.readline()
            # A last line without its line feed was cut when drain stopped this handler: not a
            # message, and drain ignores an answer for it.
            if not line.endswith(b"\n"):
                return
            if line.strip():
                yield Message(json.loads(line))

    def ack(self, message_id):
        """The message was handled: drain acknowledges (deletes) it."""
        self._send({"id": message_id, "action": "ack"})

    def release(self, message_id):
        """The message failed: drain releases it with its retry policy."""
        self._send({"id": message_id, "action": "release"})

    def retry(self, message_id, after):
        """Deliver the message again after ``after`` seconds (0: at once; at most 1e9, which
        drain's protocol allows: a longer delay, or infinity, is sent as 1e9)."""
        self._send({"id": message_id, "action": "retry", "after": _retry_seconds(after)})

    def dead_letter(self, message_id, reason=""):
        """Give up on the message: drain moves it to quarantine."""
        self._send({"id": message_id, "action": "deadletter", "reason": _text(reason)})

    def _send(self, obj):
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with self._lock:
            self._out.write(data)
            self._out.flush()


def _take_descriptor(fd, mode, stand_in):
    """The pipe on descriptor ``fd`` as a file opened with ``mode``, on a private copy that
    child processes do not inherit (os.dup, PEP 446); ``fd`` itself then refers to what
    descriptor ``stand_in`` does (dup2(2))."""
    private = os.dup(fd)
    os.dup2(stand_in, fd)
    return os.fdopen(private, mode)


def _retry_seconds(after):
    """``after`` as drain accepts it: a finite number from 0 to ``MAX_RETRY_AFTER``."""
    try:
        seconds = float(after)
    except OverflowError:  # an integer past a float's range (10**400)
        seconds = math.inf if after > 0 else 0.0
    if math.isnan(seconds):
        return 0.0
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


def _text(value):
    """``value`` as text that encodes to UTF-8. A lone surrogate (how os.fsdecode, os.listdir
    and sys.argv carry a byte that is not UTF-8) becomes a backslash and its code in text,
    as ``backslashreplace`` writes it: json.dumps would send it as a lone surrogate escape,
    which drain refuses as no JSON text it can read, stopping the handler and failing every
    message it holds."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _answer(session, handle, message):
    try:
        handle(message)
    except Retry as retry:
        session.retry(message.id, retry.after)
    except DeadLetter as dead:
        session.dead_letter(message.id, dead.reason)
    except Exception as error:  # noqa: BLE001 - any failure releases the message
        # One write with its newline: print() writes the end separately, and mailboxctl writes
        # to the same stderr, so its lines could land between the two. The exception's type
        # only: its text often holds message data, which never goes to a log from here.
        line = f"mailbox_handler: message {message.id}: {type(error).__name__}\n"
        sys.stderr.write(line)
        sys.stderr.flush()
        session.release(message.id)
    except BaseException as error:
        if threading.current_thread() is threading.main_thread():
            raise
        # sys.exit() (or another BaseException) in a worker ends the handler as it would with
        # one thread: the answers sent stand, drain releases what was not answered. A pool
        # would swallow it, leaving the message unanswered while drain waits for an answer.
        code = error.code if isinstance(error, SystemExit) else 1
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)
    else:
        session.ack(message.id)


def run(handle, threads=1):
    """Serves messages until drain closes stdin: ``handle(message)`` returning acknowledges the
    message, ``Retry``/``DeadLetter`` do what they say, any other exception releases it.
    With ``threads`` above 1, up to that many messages are handled at once (answers go out in
    the order they finish). Returns 0 (an exit status); raises ``ProtocolError`` on a greeting
    it does not understand, or when drain is gone before the handshake ended."""
    session = Session()
    if threads <= 1:
        for message in session:
            _answer(session, handle, message)
        return 0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for message in session:
            pool.submit(_answer, session, handle, message)
    return 0
