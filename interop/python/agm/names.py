"""Names of the entries of a namespace (FORMAT.md, "Layout" and "Names"): their formats and parsing.

A name is the only place that holds a message's order, id, delivery count, lease and due time, so
every other module formats and parses names here and nowhere else.
"""

import os
import re

MAX_MICROS = 9_999_999_999_999_999
# The largest sequence a producer hands out (2^63 - 1); a name may hold up to 2^64 - 1, and is a
# message all the same, but does not move the counter (FORMAT.md, "Names").
MAX_SEQUENCE = (1 << 63) - 1
MAX_ATTEMPTS = 2_147_483_647


def micros_after(now, seconds):
    """The time `seconds` after `now` (microseconds), clamped to MAX_MICROS (2286, as the
    library clamps a delay up to infinity); raises ValueError for NaN."""
    if seconds != seconds:
        raise ValueError("a delay must be a number of seconds, not NaN")
    if seconds * 1_000_000 >= MAX_MICROS - now:
        return MAX_MICROS
    return now + int(seconds * 1_000_000)
NAMESPACE = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
DEFAULT_LEVEL = 5
STEM = re.compile(
    r"(?:p([0-46-9])-)?(\d{16})-(\d{20})-(" + UUID_TEXT + r")-(0|[1-9]\d{0,9})", re.ASCII)
CLAIMED = re.compile(r"(.+)\.([0-9a-f]{16})\.(\d{16})\.claim", re.ASCII)
DELAYED = re.compile(r"(\d{16})-(.+\.msg)", re.ASCII)
QUARANTINED = re.compile(
    r"\d{16}-[a-z]+-(" + UUID_TEXT + r"|unknown)-[0-9a-f]{8}\.q", re.ASCII | re.I)
ANY_UUID = re.compile(UUID_TEXT, re.ASCII | re.I)


def valid_namespace(namespace):
    """Whether namespace is a valid namespace name (FORMAT.md, "Layout")."""
    return (bool(NAMESPACE.fullmatch(namespace)) and set(namespace) != {"."}
            and not namespace.startswith("-"))


class Name:
    """A pending name: [p<level>-]<enqueuedAt:16>-<sequence:20>-<id>-<attempts>.msg; the prefix
    only for a priority level other than 5 (FORMAT.md, "Priority levels")."""

    def __init__(self, micros, sequence, id, attempts, level=DEFAULT_LEVEL):
        self.micros, self.sequence, self.id, self.attempts = micros, sequence, id, attempts
        self.level = level

    @property
    def key(self):
        """Claim order: the highest level first, then FIFO, then (for equal keys, which only
        hand-made names have) the id, as FORMAT.md "Priority levels" orders them."""
        return (-self.level, self.micros, self.sequence, self.id)

    @property
    def eviction_key(self):
        """discardOldest order: the lowest level first, then oldest first."""
        return (self.level, self.micros, self.sequence)

    @property
    def stem(self):
        prefix = "" if self.level == DEFAULT_LEVEL else f"p{self.level}-"
        return f"{prefix}{self.micros:016d}-{self.sequence:020d}-{self.id}-{self.attempts}"

    @property
    def file(self):
        return self.stem + ".msg"

    @staticmethod
    def parse_stem(text):
        match = STEM.fullmatch(text)
        if not match:
            return None
        level, micros, sequence, id, attempts = match.groups()
        if int(sequence) >= 1 << 64 or int(attempts) > MAX_ATTEMPTS:
            return None
        return Name(int(micros), int(sequence), id, int(attempts),
                    DEFAULT_LEVEL if level is None else int(level))

    @staticmethod
    def parse(text):
        return Name.parse_stem(text[:-4]) if text.endswith(".msg") else None


class ClaimedName:
    """<pending stem with attempts counting this claim>.<token:16>.<leaseUntil:16>.claim"""

    def __init__(self, name, token, lease):
        self.name, self.token, self.lease = name, token, min(max(lease, 0), MAX_MICROS)

    @property
    def file(self):
        return f"{self.name.stem}.{self.token}.{self.lease:016d}.claim"

    @staticmethod
    def parse(text):
        match = CLAIMED.fullmatch(text)
        name = match and Name.parse_stem(match.group(1))
        return ClaimedName(name, match.group(2), int(match.group(3))) if name else None


def delayed_file(due, name):
    """The delayed name <due:16>-<pending name> of name, due at due (microseconds)."""
    return f"{due:016d}-{name.file}"


def parse_delayed(text):
    """(due, pending name) of a delayed name, or None."""
    match = DELAYED.fullmatch(text)
    name = match and Name.parse(match.group(2))
    return (int(match.group(1)), name) if name else None


def quarantined_file(micros, reason, id, tag):
    """The quarantined name <micros:16>-<reason>-<id or unknown>-<tag:8 hex>.q."""
    return f"{micros:016d}-{reason}-{id or 'unknown'}-{tag}.q"


def quarantined_id(text):
    """The id a quarantined name carries, or None (a foreign name, or "unknown")."""
    match = QUARANTINED.fullmatch(text)
    return match.group(1).lower() if match and match.group(1) != "unknown" else None


def trim_key(entry):
    """The order quarantine trim deletes entries in (FORMAT.md, "Quarantine"): entries under
    foreign names first, then quarantine names, each by the bytes of the name (os.fsencode: so a
    name that is not UTF-8 sorts by its bytes too), as the Swift library orders them."""
    return (QUARANTINED.fullmatch(entry) is not None, os.fsencode(entry))
