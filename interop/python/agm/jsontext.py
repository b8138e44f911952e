"""JSON read one way: what the Swift library's readers accept of a header line, a settings file
and an untyped message (FORMAT.md, "Message files" and "The settings file"), where JSON readers
differ."""

import json

# The deepest nesting the Swift readers decode (JSONDecoder's and JSONSerialization's limit,
# the outer object counted); deeper is refused on both sides, and Python's json would otherwise
# raise RecursionError on a hostile file.
MAX_DEPTH = 512


class NotOneObject(ValueError):
    """Not one JSON object (or value) by RFC 8259 (a trailing comma, NaN, nesting past
    MAX_DEPTH...), or one the Swift readers refuse (a lone surrogate, a number past a double's
    range)."""


class RepeatedName(ValueError):
    """A member name given twice, or one that is not valid Unicode (a lone surrogate)."""


def loads_object(text, whole=False):
    """The members of ``text`` as a dict, when it is one JSON object whose member names are all
    different (compared as Unicode scalars) and valid Unicode; raises NotOneObject or
    RepeatedName otherwise. Python's json takes the last of two members of one name and Swift's
    JSONDecoder the first, so a name given twice is refused rather than read either way.

    With ``whole`` (the settings file, which the Swift library reads with JSONSerialization),
    every string at any depth must be valid Unicode and every number within a double's range,
    or it is NotOneObject; without it (a header line, read with JSONDecoder, which looks only
    at the members it knows) only the member names are checked."""
    value = _parse(text)
    if not isinstance(value, _Members):
        raise NotOneObject("not one JSON object")
    if value.repeated or not all(is_text(name) for name in value):
        raise RepeatedName("a member name is given twice or is not valid Unicode")
    if whole and not _representable(value):
        raise NotOneObject("not one JSON object")
    return dict(value)


def _representable(value):
    """Whether every string in ``value`` is valid Unicode and every number, integers too, within
    a double's range (iteratively: a value may nest MAX_DEPTH deep, past Python's recursion
    limit)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if not all(is_text(name) for name in item):
                return False
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            if not is_text(item):
                return False
        elif isinstance(item, float) and item in (float("inf"), float("-inf")):
            return False
        elif isinstance(item, int) and not isinstance(item, bool):
            try:
                float(item)  # rounds to nearest, as JSONSerialization does; past the range:
            except OverflowError:  # OverflowError, where JSONSerialization refuses the text
                return False
    return True


def loads_value(text):
    """One JSON value, as the Swift library's untyped readers accept a message
    (AppGroupRawMailbox.isJSON: RFC 8259's grammar, then what JSONSerialization refuses: a lone
    surrogate anywhere, a number past a double's range, nesting past MAX_DEPTH); raises
    NotOneObject otherwise. Member names may repeat: a message is the producer's business."""
    value = _parse(text)
    if not _representable(value):
        raise NotOneObject("not one JSON value")
    return value


def _parse(text):
    """json.loads without NaN or Infinity and within MAX_DEPTH; objects as _Members."""
    if _depth(text) > MAX_DEPTH:
        raise NotOneObject("too deep")
    try:
        return json.loads(text, object_pairs_hook=_Members.of, parse_constant=_not_json)
    except (ValueError, RecursionError):
        raise NotOneObject("not one JSON value")


def is_text(value):
    """A string that is valid Unicode (a lone surrogate escape, which Python's json reads, is not;
    the Swift readers refuse it)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class _Members(dict):
    """A JSON object's members; ``repeated`` when a name came more than once."""
    repeated = False

    @classmethod
    def of(cls, pairs):
        members = cls(pairs)
        members.repeated = len(members) != len(pairs)
        return members


def _not_json(constant):
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's json reads and JSON has not."""
    raise ValueError("not JSON: " + constant)


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
