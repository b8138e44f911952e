"""What the NATS JetStream bridge's programs share: the headers a mailbox message carries in
JetStream, the connection options, and rate-limited logging to standard error.

A mailbox message in a JetStream stream is the message's JSON bytes as the payload, with
headers:

- ``Nats-Msg-Id``: the mailbox message id (lower-case UUID). JetStream drops a second publish
  with the same id within the stream's duplicate window (ADR-0031 / JetStream docs, "Message
  Deduplication"), which turns the mailbox's at-least-once hand-over into one stored message.
- ``Mailbox-Enqueued-At``: when it was first enqueued (ISO 8601, UTC, microseconds).
- ``Mailbox-Type``: the producer's type tag, absent when untyped, when the tag is printable
  ASCII that neither starts nor ends with a space: NATS clients trim a header value's ends and
  turn line breaks into spaces (nats-py 2.16 ``Client.publish`` and ``_parse_header_lines``),
  which would hand the message to another type's consumers.
- ``Mailbox-Type-Encoded``: instead of ``Mailbox-Type`` for any other tag: its UTF-8 bytes
  percent-encoded (RFC 3986, section 2.1; every byte but ``A-Z a-z 0-9 - . _ ~``).
- ``Mailbox-Payload-Version``: the version of the message's encoded form (docs/FORMAT.md,
  "Payload versions"), absent for version 1.
- ``Mailbox-Priority``: the message's priority level, 0 to 9, absent for the default 5.
"""

import argparse
import asyncio
import datetime
import os
import re
import sys
import time
import urllib.parse

MSG_ID = "Nats-Msg-Id"
ENQUEUED_AT = "Mailbox-Enqueued-At"
TYPE = "Mailbox-Type"
TYPE_ENCODED = "Mailbox-Type-Encoded"
PAYLOAD_VERSION = "Mailbox-Payload-Version"
PRIORITY = "Mailbox-Priority"
DEFAULT_PRIORITY = 5
MAX_PAYLOAD_VERSION = 2**31 - 1


def payload_version(text):
    """The payload version a ``Mailbox-Payload-Version`` header holds (1 when absent), or None
    when it is not a decimal integer from 1 to 2**31 - 1."""
    if text is None or text == "":
        return 1
    if not text.isascii() or not text.isdigit():
        return None
    version = int(text)
    return version if 1 <= version <= MAX_PAYLOAD_VERSION else None


def priority(text):
    """The priority level a ``Mailbox-Priority`` header holds (5 when absent), or None when it
    is not one digit from 0 to 9."""
    if text is None or text == "":
        return DEFAULT_PRIORITY
    if len(text) != 1 or text not in "0123456789":
        return None
    return int(text)


def published_size(headers, payload, stream=None):
    """The bytes a JetStream publish of ``payload`` with ``headers`` puts against the server's
    max_payload: the header block as nats-py 2.16 writes it (``NATS/1.0``, one ``name: value``
    line each, with ``Nats-Expected-Stream`` when a stream is given, and an empty line) plus the
    payload (NATS client protocol, HPUB)."""
    lines = dict(headers)
    if stream:
        lines["Nats-Expected-Stream"] = stream
    size = len(b"NATS/1.0\r\n\r\n") + len(payload)
    for name, value in lines.items():
        size += len(name.encode()) + 2 + len(str(value).strip().encode()) + 2
    return size


def consumer_problems(config, subject):
    """What makes an existing durable consumer (its ConsumerConfig) unfit for consume.py, which
    creates it with explicit acknowledgements, as a pull consumer, filtered on ``subject`` (""
    for the whole stream): a list of reasons, empty when it fits."""
    from nats.js.api import AckPolicy

    problems = []
    if config.ack_policy != AckPolicy.EXPLICIT:
        policy = getattr(config.ack_policy, "value", config.ack_policy)
        problems.append(f"its ack policy is {policy}, not explicit")
    if config.deliver_subject:
        problems.append("it is a push consumer")
    have = [config.filter_subject] if config.filter_subject else list(config.filter_subjects or [])
    if have != ([subject] if subject else []):
        problems.append(f"it filters {', '.join(have) or 'nothing'}, not "
                        f"{subject or 'nothing (--subject not given)'}")
    return problems


def type_headers(tag):
    """The header that carries the type tag ``tag``: none when untyped, ``Mailbox-Type`` when
    the tag crosses NATS unchanged, else ``Mailbox-Type-Encoded``."""
    if not tag:
        return {}
    if all(" " <= c <= "~" for c in tag) and tag[0] != " " and tag[-1] != " ":
        return {TYPE: tag}
    return {TYPE_ENCODED: urllib.parse.quote(tag, safe="", errors="strict")}


PERCENT_ENCODED = re.compile(r"(?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+")


def message_type(headers):
    """The type tag the headers carry ("" when untyped) and None, or None and why the headers
    cannot name one (then the message is bad data: terminated, not retried)."""
    encoded = headers.get(TYPE_ENCODED)
    if encoded is None:
        tag = headers.get(TYPE) or ""
        if "\ufffd" in tag:  # nats-py's stand-in for bytes that are not UTF-8
            return None, f"its {TYPE} header is not UTF-8"
    elif headers.get(TYPE):
        return None, f"it has both a {TYPE} and a {TYPE_ENCODED} header"
    elif not PERCENT_ENCODED.fullmatch(encoded):
        return None, f"its {TYPE_ENCODED} header is not percent-encoded"
    else:
        try:
            tag = urllib.parse.unquote_to_bytes(encoded).decode("utf-8")
        except UnicodeDecodeError:
            return None, f"its {TYPE_ENCODED} header is not UTF-8 once decoded"
    if "\0" in tag:
        return None, "its type tag holds a NUL character, which no command line can carry"
    return tag, None


FIRST_DATE = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
LAST_DATE = datetime.datetime(2286, 11, 20, 17, 46, 39, 999999, tzinfo=datetime.timezone.utc)

ISO_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|z|[+-]\d{2}:?\d{2})",
    re.ASCII)  # \d: 0 to 9 only, not every Unicode digit


def enqueued_at(text):
    """The date a ``Mailbox-Enqueued-At`` header holds, as ``mailboxctl enqueue --enqueued-at``
    takes it (ISO 8601, UTC, microseconds), or None when it is not such a date (then the message
    is bad data: terminated, not retried)."""
    match = ISO_DATE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        offset = datetime.timezone.utc if zone in ("Z", "z") else datetime.timezone(
            (1 if zone[0] == "+" else -1) * datetime.timedelta(
                hours=int(zone[1:3]), minutes=int(zone[-2:])))
        date = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute),
                                 int(second), int((fraction or "0")[:6].ljust(6, "0")), offset)
        date = date.astimezone(datetime.timezone.utc)
    except (ValueError, OverflowError):
        return None
    # The dates a mailbox represents (mailboxctl enqueue --enqueued-at).
    if not FIRST_DATE <= date <= LAST_DATE:
        return None
    return date.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def add_connection_arguments(parser):
    """Adds ``--server`` (repeatable, or comma-separated; default $NATS_URL or
    nats://127.0.0.1:4222) and
    ``--creds`` (a NATS credentials file)."""
    parser.add_argument(
        "--server", action="append", default=None,
        help="a NATS server URL: nats://, tls://, ws:// or wss://, or host:port (repeat, or "
        "separate with commas, for a cluster; default $NATS_URL or nats://127.0.0.1:4222)")
    parser.add_argument("--creds", default=None, help="a NATS user credentials file")


def _bounded(convert, low, high, what, unit, shown):
    """An argparse type: ``convert(text)`` from ``low`` to ``high`` (``what`` names the kind in
    the error, ``unit`` follows the bounds, ``shown`` formats them)."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        if not low <= value <= high:  # also false for nan
            raise argparse.ArgumentTypeError(
                f"{text} is not from {shown(low)} to {shown(high)}{unit}")
        return value
    return parse


def seconds(low, high):
    """An argparse type: a number of seconds from ``low`` to ``high`` (finite)."""
    return _bounded(float, low, high, "a number of seconds", " seconds", lambda v: f"{v:g}")


def integer(low, high):
    """An argparse type: an integer from ``low`` to ``high``."""
    return _bounded(int, low, high, "an integer", "", str)


FIRST_CONNECT_ATTEMPTS = 3  # per server, 0.5 s apart, each bounded by the 2 s connect timeout


async def connect(arguments, name):
    """Connects to the servers of ``arguments`` and keeps reconnecting forever after a loss (the
    client buffers publishes meanwhile). When no server answers the first time (each tried
    FIRST_CONNECT_ATTEMPTS times: a few seconds for a refused connection), raises
    ConnectionError naming the servers and the last error; ``connect_retrying`` tries again
    until a server answers."""
    import nats
    import nats.errors

    servers = server_urls(arguments)
    readable_creds(arguments)
    last = []  # the last error, for the one that says why the first connection failed
    refusals = []  # an authorization refused on any attempt (the server then resets it)

    async def on_error(error):
        last[:] = [error]
        if (isinstance(error, nats.errors.AuthorizationError)
                or "authorization violation" in str(error).lower()):
            refusals[:] = [error]
        log.say(f"NATS: {type(error).__name__}: {error}")

    # nats-py retries the first connection like a reconnect: for ever with
    # max_reconnect_attempts=-1 (it would never raise). So the first connection gets a few
    # attempts, and the unbounded reconnects are set once it succeeded (the client reads the
    # option on each reconnect).
    try:
        nc = await nats.connect(
            servers=servers, name=name, user_credentials=arguments.creds,
            max_reconnect_attempts=FIRST_CONNECT_ATTEMPTS - 1, reconnect_time_wait=0.5,
            connect_timeout=2, error_cb=on_error, allow_reconnect=True)
    except nats.errors.NoServersError as error:
        shown = ", ".join(redacted(server) for server in servers)
        why = f": {type(last[0]).__name__}: {last[0]}" if last else ""
        # A server that answered and refused the credentials (on any attempt: the last error
        # may be the connection it reset after): trying again cannot mend it.
        if refusals:
            refused = f": {type(refusals[0]).__name__}: {refusals[0]}"
            raise PermissionError(f"NATS refused the authorization at {shown}{refused}") from error
        raise ConnectionError(f"no NATS server answers at {shown}{why}") from error
    nc.options["max_reconnect_attempts"] = -1
    return nc


def readable_creds(arguments):
    """Raises OSError naming the ``--creds`` file when one is given and cannot be read (said
    before nats-py's own errors, which name its missing nkeys module first)."""
    if not arguments.creds:
        return
    try:
        with open(arguments.creds, "rb"):
            pass
    except OSError as error:
        raise OSError(
            f"cannot read the --creds file {arguments.creds}: {error.strerror}") from None


NATS_SCHEMES = ("nats", "tls", "ws", "wss")  # what nats-py connects to


def server_urls(arguments):
    """The servers to try: each ``--server``, else $NATS_URL, else nats://127.0.0.1:4222, with
    comma-separated lists split (as $NATS_URL often holds a cluster) and the scheme in lower
    case (nats-py recognises only lower case). Raises ValueError for a URL whose scheme is not
    nats, tls, ws or wss (nats-py would take it for a host name and retry it for ever)."""
    given = arguments.server or [os.environ.get("NATS_URL") or "nats://127.0.0.1:4222"]
    servers = []
    for entry in given:
        for server in (part.strip() for part in entry.split(",")):
            if not server:
                continue
            scheme, separator, rest = server.partition("://")
            if not separator and re.match(r"[A-Za-z][A-Za-z0-9+.-]*:/", server):
                raise ValueError(
                    f"{redacted(server)} is not a NATS server URL: its scheme needs '://'")
            if separator:
                if scheme.lower() not in NATS_SCHEMES:
                    raise ValueError(
                        f"{redacted(server)} is not a NATS server URL: the scheme must be "
                        + ", ".join(NATS_SCHEMES[:-1]) + f" or {NATS_SCHEMES[-1]}")
                server = f"{scheme.lower()}://{rest}"
            servers.append(server)
    if not servers:
        raise ValueError("no NATS server given (--server or $NATS_URL is empty)")
    return servers


def redacted(url):
    """``url`` for a log: the password of its user information, or a token given there,
    replaced by ``***``, with or without a scheme. The user information runs to the last
    ``@`` (a password may hold ``@`` or ``/``; a host never holds ``@``)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    if "@" not in rest:
        return url
    user_info, _, host = rest.rpartition("@")
    shown = f"{user_info.split(':', 1)[0]}:***" if ":" in user_info else "***"  # else a token
    return f"{scheme}{separator}{shown}@{host}"


async def connect_retrying(arguments, name):
    """``connect``, tried again (0.1 s apart, doubling up to 5 s) until a server answers; each
    failure is logged as "cannot connect yet". Only a server that does not answer is tried
    again: any other error (a credentials file that is missing, the ``nkeys`` module missing
    for ``--creds``, an authorization refused, a URL that is not a NATS one) is raised, as trying again cannot mend it."""
    delay = 0.1
    while True:
        try:
            return await connect(arguments, name)
        except ConnectionError as error:
            log.say(f"cannot connect yet: {type(error).__name__}: {error}", kind="connect")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)


class Log:
    """Lines on standard error. ``say`` writes at most one a second per kind (a dead server
    must not flood the journal) and adds the number left out to the next line of that kind;
    ``record`` writes every line, for what happens to one message for good (terminated, dead
    lettered): an operator must be able to find each id."""

    def __init__(self, program):
        self.program = program
        self.last = {}
        self.skipped = {}

    def say(self, text, kind=None):
        kind = kind or text
        now = time.monotonic()
        if now - self.last.get(kind, -10.0) < 1.0:
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
            return
        self.last[kind] = now
        more = self.skipped.pop(kind, 0)
        suffix = f" (and {more} more like it)" if more else ""
        self.record(text + suffix)

    def record(self, text):
        print(f"{self.program}: {text}", file=sys.stderr, flush=True)


log = Log(os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "nats_bridge")
