"""A message file: the header line, a line feed, then the message (FORMAT.md, "Message files")."""

import json

from .errors import HeaderTooLong
from .jsontext import is_text, loads_object, loads_value
from .names import ANY_UUID

MAX_HEADER_BYTES = 4096
MAX_PAYLOAD_VERSION = 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def encode(id, micros, message_type, payload, payload_version=1):
    """The bytes of a message file: the header the library writes, then payload byte for byte;
    HeaderTooLong when the header line would not fit in MAX_HEADER_BYTES.
    A payload version other than 1 is recorded as ``payloadVersion`` (FORMAT.md, "Payload
    versions"); version 1 is written without it, as the library does."""
    fields = {"enqueuedAt": micros, "format": 1, "id": id, "messageType": message_type}
    if payload_version != 1:
        fields["payloadVersion"] = payload_version
    header = json.dumps(fields, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    line = header.encode("utf-8") + b"\n"
    if len(line) > MAX_HEADER_BYTES:
        raise HeaderTooLong()
    return line + payload


def decode_header(data):
    """(header dict, payload bytes), or raises ValueError("malformed" or "future")."""
    newline = data.find(b"\n", 0, min(len(data), MAX_HEADER_BYTES))
    if newline <= 0 or data[:1] != b"{":
        raise ValueError("malformed")
    try:
        # One object, each member name once: where JSON readers disagree (jsontext).
        header = loads_object(data[:newline].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("malformed")
    version = header.get("format")
    if type(version) is not int or not 1 <= version <= INT64_MAX:
        raise ValueError("malformed")
    if version > 1:
        raise ValueError("future")
    if (type(header.get("enqueuedAt")) is not int
            or not INT64_MIN <= header["enqueuedAt"] <= INT64_MAX
            or not is_text(header.get("id")) or not is_text(header.get("messageType"))
            or not ANY_UUID.fullmatch(header["id"])
            or ("key" in header and not is_text(header["key"]))):
        raise ValueError("malformed")
    version = header.get("payloadVersion", 1)
    if type(version) is not int or not 1 <= version <= MAX_PAYLOAD_VERSION:
        raise ValueError("malformed")
    return header, data[newline + 1:]


def is_json(payload):
    """Whether payload is exactly one JSON value in UTF-8 as the Swift library judges it
    (jsontext.loads_value): what an untyped consumer delivers; anything else is malformed."""
    try:
        loads_value(payload.decode("utf-8"))
        return True
    except (UnicodeDecodeError, ValueError):
        return False
