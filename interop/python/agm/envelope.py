"""A message file: the header line, a line feed, then the message (FORMAT.md, "Message files")."""

import json

from .names import ANY_UUID

MAX_HEADER_BYTES = 4096
MAX_PAYLOAD_VERSION = 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
# The deepest nesting of a header the Swift reader decodes (its JSONDecoder's limit, the header
# object counted); deeper is malformed on both sides.
MAX_HEADER_DEPTH = 512


def encode(id, micros, message_type, payload, payload_version=1):
    """The bytes of a message file: the header the library writes, then payload byte for byte.
    A payload version other than 1 is recorded as ``payloadVersion`` (FORMAT.md, "Payload
    versions"); version 1 is written without it, as the library does."""
    fields = {"enqueuedAt": micros, "format": 1, "id": id, "messageType": message_type}
    if payload_version != 1:
        fields["payloadVersion"] = payload_version
    header = json.dumps(fields, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return header.encode("utf-8") + b"\n" + payload


def decode_header(data):
    """(header dict, payload bytes), or raises ValueError("malformed" or "future")."""
    newline = data.find(b"\n", 0, min(len(data), MAX_HEADER_BYTES))
    if newline <= 0 or data[:1] != b"{":
        raise ValueError("malformed")
    try:
        text = data[:newline].decode("utf-8")
        if _depth(text) > MAX_HEADER_DEPTH:
            raise ValueError("too deep")
        header = json.loads(text, object_pairs_hook=_Members.of, parse_constant=_not_json)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("malformed")
    # One object, each member name once and valid Unicode: which of two same-named members
    # counts is where JSON readers disagree (FORMAT.md, "Message files").
    if (not isinstance(header, _Members) or header.duplicate
            or not all(_is_text(name) for name in header)):
        raise ValueError("malformed")
    version = header.get("format")
    if type(version) is not int or not 1 <= version <= INT64_MAX:
        raise ValueError("malformed")
    if version > 1:
        raise ValueError("future")
    if (type(header.get("enqueuedAt")) is not int
            or not INT64_MIN <= header["enqueuedAt"] <= INT64_MAX
            or not _is_text(header.get("id")) or not _is_text(header.get("messageType"))
            or not ANY_UUID.fullmatch(header["id"])
            or ("key" in header and not _is_text(header["key"]))):
        raise ValueError("malformed")
    version = header.get("payloadVersion", 1)
    if type(version) is not int or not 1 <= version <= MAX_PAYLOAD_VERSION:
        raise ValueError("malformed")
    return header, data[newline + 1:]


class _Members(dict):
    """A JSON object's members; ``duplicate`` when a name came more than once."""
    duplicate = False

    @classmethod
    def of(cls, pairs):
        members = cls(pairs)
        members.duplicate = len(members) != len(pairs)
        return members


def _not_json(constant):
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's json reads and JSON has not."""
    raise ValueError("not JSON: " + constant)


def _is_text(value):
    """A string that is valid Unicode (a lone surrogate escape, which Python's json reads,
    is not, and the Swift reader refuses it)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _depth(text):
    """The deepest nesting of objects and arrays in JSON text, strings skipped."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def is_json(payload):
    """Whether payload is exactly one JSON value in UTF-8 (what an untyped consumer delivers)."""
    try:
        json.loads(payload.decode("utf-8"))
        return True
    except (UnicodeDecodeError, ValueError):
        return False
